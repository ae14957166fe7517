"""Steps in a timeline: where an engine got faster or slower between versions.

The method is asv's (airspeed velocity, ``asv/step_detect.py``): the timeline is taken as piecewise
constant plus noise, and the fit is the partition into segments that minimises the residual cost
plus a penalty per segment (Friedrich et al. 2008, "Complexity penalized M-estimation"; the
penalty is Schwarz's, as Yao 1988 uses it to count change points). Two things differ from asv:

- pdx stores every repetition, so each point's noise is known: a point's weight is the inverse of
  its mean's variance (within-run spread / n) plus the run-to-run variance the series shows beyond
  that (estimated robustly from successive differences, so a step does not inflate it). The cost is
  then a chi-square, and the penalty is in the same units whatever the engine's speed.
- The partition is solved exactly (optimal partitioning, O(n^2): a timeline holds hundreds of runs,
  not asv's thousands of commits), and every step the fit keeps must also stand on its own: the 95%
  CI of its size excludes zero and the size is beyond a minimum factor (as ``pdx check`` judges two
  runs: a significant 0.5% change does not matter). A step that fails is merged away and the levels
  are fitted again.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

_Z95 = 1.959964  # two-sided 95% normal quantile
# chi-square units per step, times ln(points): Schwarz's 2, doubled for a noise that is estimated
PENALTY_PER_LOG_N = 4.0


@dataclass(frozen=True)
class Point:
    """One run in a timeline: its label (the engine version, or the run's date), the mean of its
    samples and that mean's variance from their spread (0 for one sample: the series' spread covers it)."""

    label: str
    mean: float
    variance_of_mean: float = 0.0

    @classmethod
    def of(cls, label: str, values: Sequence[float]) -> "Point":
        n = len(values)
        return cls(label, statistics.fmean(values), statistics.variance(values) / n if n > 1 else 0.0)


@dataclass(frozen=True)
class Step:
    """A change of level between two neighbouring points of a timeline."""

    index: int  # the first point at the new level
    before: str  # the label of the last point at the old level
    after: str  # the label of the first point at the new level
    level_before: float
    level_after: float
    change: float  # relative: level_after / level_before - 1
    ci95: tuple[float, float]  # of ``change``
    regression: bool  # the figure moved the bad way

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__} | {"ci95": list(self.ci95)}


def _weights(points: Sequence[Point]) -> list[float]:
    """Inverse variances of the points' means: within-run noise plus the run-to-run noise beyond it."""
    means = [p.mean for p in points]
    within = [p.variance_of_mean for p in points]
    # A difference of two neighbours has twice a point's variance. The largest quarter of the
    # differences (at least one) is left out, as it may hold the steps, and the rest are scaled back up.
    squares = sorted((b - a) ** 2 for a, b in zip(means, means[1:]))
    kept = len(squares) - max(1, len(squares) // 4)
    total = statistics.fmean(squares[:kept]) / _trimmed_share(kept / len(squares)) / 2 if kept else 0.0
    typical = statistics.median(within)
    between = max(0.0, total - typical)
    # A run whose few repetitions agree by chance would outweigh the rest: none counts as quieter than
    # a typical run of the series.
    variances = [max(w, typical) + between for w in within]
    # Identical values would have no noise at all: a floor keeps the weights finite, and within 12
    # orders of magnitude of each other so that the prefix sums below do not cancel.
    floor = max((1e-6 * max(abs(m) for m in means)) ** 2, 1e-12 * max(variances), 1e-300)
    return [1.0 / max(v, floor) for v in variances]


def _chi2_1_cdf(x: float) -> float:
    return math.erf(math.sqrt(x / 2))


def _trimmed_share(kept: float) -> float:
    """E[X | X below its ``kept`` quantile] for X chi-square with 1 degree of freedom: the mean of the
    smallest squared differences, divided by this, estimates their variance without the largest."""
    low, high = 0.0, 100.0
    for _ in range(100):  # the quantile, by bisection (no inverse erf in the standard library)
        mid = (low + high) / 2
        low, high = (mid, high) if _chi2_1_cdf(mid) < kept else (low, mid)
    q = low
    # For chi-square(1), x times its density is the chi-square(3) density: E[X; X<q] is F3(q).
    f3 = _chi2_1_cdf(q) - math.sqrt(2 * q / math.pi) * math.exp(-q / 2)
    return f3 / kept


class _Sums:
    """Prefix sums that give any segment's weighted mean and chi-square cost in O(1)."""

    def __init__(self, y: Sequence[float], w: Sequence[float]) -> None:
        self.s0, self.s1, self.s2 = [0.0], [0.0], [0.0]
        for yi, wi in zip(y, w):
            self.s0.append(self.s0[-1] + wi)
            self.s1.append(self.s1[-1] + wi * yi)
            self.s2.append(self.s2[-1] + wi * yi * yi)

    def weight(self, i: int, j: int) -> float:
        return self.s0[j] - self.s0[i]

    def mean(self, i: int, j: int) -> float:
        return (self.s1[j] - self.s1[i]) / self.weight(i, j)

    def cost(self, i: int, j: int) -> float:
        s1 = self.s1[j] - self.s1[i]
        return max(0.0, self.s2[j] - self.s2[i] - s1 * s1 / self.weight(i, j))


def _partition(sums: _Sums, n: int, penalty: float) -> list[int]:
    """The segment starts (after 0) of the penalised least-cost partition of points 0..n-1."""
    best = [0.0] + [math.inf] * n
    last = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            cost = best[i] + sums.cost(i, j) + (penalty if i else 0.0)
            if cost < best[j]:
                best[j], last[j] = cost, i
    starts, j = [], n
    while last[j]:
        starts.append(last[j])
        j = last[j]
    return sorted(starts)


def _step(points: Sequence[Point], sums: _Sums, lo: int, at: int, hi: int, higher_is_better: bool) -> Step:
    before, after = sums.mean(lo, at), sums.mean(at, hi)
    se = math.sqrt(1 / sums.weight(lo, at) + 1 / sums.weight(at, hi))
    diff = after - before
    scale = abs(before) or 1.0
    return Step(index=at, before=points[at - 1].label, after=points[at].label, level_before=before,
                level_after=after, change=diff / scale,
                ci95=((diff - _Z95 * se) / scale, (diff + _Z95 * se) / scale),
                regression=(diff < 0) == higher_is_better)


def _stands(step: Step, factor: float) -> bool:
    low, high = step.ci95
    ratio = 1 + step.change
    return (low > 0 or high < 0) and (ratio >= factor or ratio <= 1 / factor)


def detect_steps(points: Sequence[Point], factor: float, higher_is_better: bool = True,
                 penalty: float | None = None) -> list[Step]:
    """The steps of a timeline, oldest first. ``factor``: the smallest change that counts (1.05: 5%);
    ``penalty``: per step, in chi-square units (default :data:`PENALTY_PER_LOG_N` x ln(points))."""
    if factor < 1:
        raise ValueError(f"factor {factor}: must be 1 or more")
    points = [p for p in points if math.isfinite(p.mean) and math.isfinite(p.variance_of_mean)]
    n = len(points)
    if n < 3:  # two points are a comparison (pdx check), not a timeline
        return []
    sums = _Sums([p.mean for p in points], _weights(points))
    starts = _partition(sums, n, PENALTY_PER_LOG_N * math.log(n) if penalty is None else penalty)
    while True:
        bounds = [0, *starts, n]
        steps = [_step(points, sums, bounds[k - 1], bounds[k], bounds[k + 1], higher_is_better)
                 for k in range(1, len(bounds) - 1)]
        weak = [s for s in steps if not _stands(s, factor)]
        if not weak:
            return steps
        # Merge the weakest step away and judge the others again on the larger segments.
        starts.remove(min(weak, key=lambda s: abs(s.change)).index)
