"""Summary statistics over raw samples.

Samples are what pdx stores; everything here is derived from them on demand,
so a better estimator later applies to every stored run.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

# Two-sided 95% critical values of Student's t for 1..30 degrees of freedom;
# beyond 30 the normal value is within 2% and is used.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)


def t95(dof: int) -> float:
    if dof < 1:
        return math.nan
    return _T95[dof - 1] if dof <= len(_T95) else 1.960


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    stddev: float
    median: float
    min: float
    max: float
    ci95: float  # half-width of the 95% confidence interval of the mean

    @property
    def cv(self) -> float:
        """Coefficient of variation (stddev / mean)."""
        return self.stddev / self.mean if self.mean else math.nan

    def to_dict(self) -> dict:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}  # asdict deep-copies: slow
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in data.items()}


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        raise ValueError("no samples to summarise")
    n = len(values)
    mean = statistics.fmean(values)
    # Float sums, not statistics.stdev's exact fractions: as accurate as the samples, and a
    # site of 10,000 runs summarises 60,000 tests.
    stddev = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    ci95 = t95(n - 1) * stddev / math.sqrt(n) if n > 1 else math.nan
    return Summary(
        n=n,
        mean=mean,
        stddev=stddev,
        median=statistics.median(values),
        min=min(values),
        max=max(values),
        ci95=ci95,
    )


def rates(tokens: int, samples_ns: Sequence[int]) -> list[float]:
    """Tokens per second of each sample (llama-bench's samples_ts)."""
    return [tokens * 1e9 / ns for ns in samples_ns if ns > 0]


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    """First and third quartiles (the 'inclusive' method, defined from 2 values on)."""
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q3


def outliers(values: Sequence[float], fence: float = 1.5) -> list[int]:
    """Indices of values outside Tukey's fences (``fence`` x IQR beyond the quartiles).

    Outliers are marked, never dropped: every statistic still uses every
    sample, and the indices let a reader see which repetition misbehaved.
    Fewer than 4 values carry too little to call any of them an outlier.
    """
    if len(values) < 4:
        return []
    q1, q3 = quartiles(values)
    low, high = q1 - fence * (q3 - q1), q3 + fence * (q3 - q1)
    return [i for i, v in enumerate(values) if v < low or v > high]


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> dict | None:
    """Least squares ``y = intercept + slope * x`` with the standard error of each (None
    with no residual degree of freedom); None below two distinct x."""
    n = len(xs)
    if n < 2 or len(set(xs)) < 2:
        return None
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    slope = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    intercept = my - slope * mx
    slope_se = intercept_se = None
    if n > 2:
        s2 = math.fsum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys)) / (n - 2)
        slope_se, intercept_se = math.sqrt(s2 / sxx), math.sqrt(s2 * (1 / n + mx * mx / sxx))
    return {"intercept": intercept, "slope": slope, "intercept_se": intercept_se, "slope_se": slope_se, "n": n,
            "x_min": min(xs), "x_max": max(xs)}
