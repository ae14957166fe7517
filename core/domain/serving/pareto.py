"""The Pareto front of a server-configuration sweep (:mod:`pdx.domain.serving.grid`): the points no other
point beats on both axes at once.

Serving trades one user's speed against the server's total: more requests decoded together raise the
aggregate tokens/s and lower each stream's. A configuration is on the front when no other gives at
least as much on both axes and more on one; every point off it is a configuration to leave aside.
"""

from __future__ import annotations

from typing import Sequence

Point = tuple[float, float]


def dominates(a: Point, b: Point, better: tuple[int, int]) -> bool:
    """Whether ``a`` is at least as good as ``b`` on both axes and better on one; ``better``: +1 where
    higher is better on that axis, -1 where lower is."""
    at_least = all(s * x >= s * y for s, x, y in zip(better, a, b))
    return at_least and any(s * x > s * y for s, x, y in zip(better, a, b))


def front(points: Sequence[Point], better: tuple[int, int] = (1, 1)) -> list[int]:
    """The indices of the points on the front, in the order of the first axis (ties: the second).
    Equal points are all on it or all off it; a point with a non-finite value is on neither side."""
    finite = [i for i, p in enumerate(points) if all(v == v and abs(v) != float("inf") for v in p)]
    kept = [i for i in finite if not any(dominates(points[j], points[i], better) for j in finite)]
    return sorted(kept, key=lambda i: (points[i][0], points[i][1]))
