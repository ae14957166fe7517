"""Comparing two runs test by test on their raw samples.

The significance test is Mann-Whitney U (rank-based: no normality assumed,
robust to the odd slow repetition), exact for small samples without ties and
normal-approximated otherwise. A change counts only when it is significant
*and* larger than a minimum factor, as in asv: a 0.5% change can be
significant with enough samples and still not matter.

``pdx check`` gates on these comparisons; ``pdx compare`` and the reports
reuse them.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Sequence

from pdx.domain.stats import rates
from pdx.domain.workload import repetition_tokens

# asv's marks, read as "the new run is ... than the baseline".
MARKS = {
    "+": "significantly slower",
    "-": "significantly faster",
    "~": "changed beyond the factor, but not significantly",
    " ": "within the factor",
    "x": "cannot be compared",
    "!": "failed in the new run",
}
DEFAULT_FACTOR = 1.05
DEFAULT_ALPHA = 0.05
DEFAULT_RETRIES = 1  # an undecided commit is benched again this many times before `pdx bisect` gives up on it
_EXACT_LIMIT = 50  # exact U distribution up to this many samples in all


@lru_cache(maxsize=None)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many orderings of m + n distinct values give each U from 0 to m*n."""
    if m == 0 or n == 0:
        return (1,)
    # The largest value belongs to the first group (adds n to U) or to the second.
    with_first, with_second = _u_counts(m - 1, n), _u_counts(m, n - 1)
    counts = [0] * (m * n + 1)
    for u, c in enumerate(with_first):
        counts[u + n] += c
    for u, c in enumerate(with_second):
        counts[u] += c
    return tuple(counts)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (1-based) of the values, and the sizes of tied groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks, ties = [0.0] * len(values), []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """U of ``a`` against ``b`` and the two-sided p-value."""
    m, n = len(a), len(b)
    if not m or not n:
        raise ValueError("Mann-Whitney U needs samples on both sides")
    ranks, ties = _ranks(list(a) + list(b))
    u = sum(ranks[:m]) - m * (m + 1) / 2
    if not ties and m + n <= _EXACT_LIMIT:
        counts = _u_counts(m, n)
        total = sum(counts)
        low = sum(counts[: int(u) + 1]) / total
        high = sum(counts[int(u):]) / total
        return u, min(1.0, 2 * min(low, high))
    total = m + n
    tie_term = sum(t**3 - t for t in ties) / (total * (total - 1))
    sigma = math.sqrt(m * n / 12 * ((total + 1) - tie_term))
    if sigma == 0:
        return u, 1.0
    z = max(0.0, abs(u - m * n / 2) - 0.5) / sigma
    return u, math.erfc(z / math.sqrt(2))


def smallest_p(m: int, n: int) -> float:
    """The smallest two-sided p-value m against n samples can reach (no ties)."""
    return min(1.0, 2 / math.comb(m + n, m))


def sample_rates(test: dict) -> list[float]:
    """Tokens per second of each stored sample of a test (as a run dict holds it)."""
    return rates(repetition_tokens(test), [s["ns"] for s in test.get("samples") or []])


@dataclass(frozen=True)
class TestComparison:
    """One test of the baseline against the same test of the new run."""

    __test__ = False  # not a pytest class

    name: str
    mark: str
    base_rate: float | None = None  # median t/s
    new_rate: float | None = None
    ratio: float | None = None  # base rate / new rate: a time ratio, above 1 is slower (asv's sense)
    p_value: float | None = None
    note: str = ""

    @property
    def regression(self) -> bool:
        return self.mark in ("+", "!")

    def to_dict(self) -> dict:
        return asdict(self) | {"regression": self.regression, "meaning": MARKS[self.mark]}


def compare_tests(base: dict | None, new: dict | None, factor: float = DEFAULT_FACTOR,
                  alpha: float = DEFAULT_ALPHA) -> TestComparison:
    either = base or new
    if either is None:
        raise ValueError("compare_tests: no test on either side")
    name = either["name"]
    if base is None or new is None:
        return TestComparison(name, "x", note=f"only in the {'new run' if base is None else 'baseline'}")
    if new["status"] != "ok" and base["status"] == "ok":
        return TestComparison(name, "!", note=f"{new['status']}: {new.get('error') or ''}".strip(": "))
    a, b = sample_rates(base), sample_rates(new)
    if base["status"] != "ok" or not a or not b:
        return TestComparison(name, "x", note="no raw samples on both sides")
    base_rate, new_rate = statistics.median(a), statistics.median(b)
    ratio = base_rate / new_rate
    _, p = mann_whitney_u(a, b)
    note = ""
    if smallest_p(len(a), len(b)) >= alpha:
        note = f"{len(a)} vs {len(b)} samples cannot reach p < {alpha}: repeat more (-r)"
    beyond = ratio > factor or ratio < 1 / factor
    if beyond and p < alpha:
        mark = "+" if ratio > 1 else "-"
    else:
        mark = "~" if beyond else " "
    return TestComparison(name, mark, base_rate, new_rate, ratio, p, note)


def compare_runs(base: dict, new: dict, factor: float = DEFAULT_FACTOR,
                 alpha: float = DEFAULT_ALPHA) -> list[TestComparison]:
    """Every test of either run, baseline order first, matched by name (depth and batch included)."""
    base_tests = {t["name"]: t for t in base["tests"]}
    new_tests = {t["name"]: t for t in new["tests"]}
    names = list(base_tests) + [n for n in new_tests if n not in base_tests]
    return [compare_tests(base_tests.get(n), new_tests.get(n), factor, alpha) for n in names]
