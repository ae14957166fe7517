"""Adaptive repetitions: repeat a test until its mean rate is known well enough.

After the first batch, the runner asks :meth:`StopRule.more` how many more
samples to take; the rule plans from the spread seen so far (the smallest n
whose 95% CI half-width would be within the target at the current
coefficient of variation), at most doubling the samples per step so an
early, noisy estimate cannot overshoot, and never past the cap. Each step is
one more ``backend.run`` call without warm-up: the engine is warm already.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from pdx.contract.backend import Sample
from pdx.domain.stats import rates, summarize, t95
from pdx.domain.workload import TestSpec


def relative_ci(test: TestSpec, samples: Sequence[Sample]) -> float:
    """95% CI half-width of the mean rate, as a fraction of the mean (inf below 2 samples)."""
    if len(samples) < 2:
        return math.inf
    summary = summarize(rates(test.tokens, [s.ns for s in samples]))
    return summary.ci95 / summary.mean


@dataclass(frozen=True)
class StopRule:
    target_ci: float  # relative half-width, 0.02 for 2%
    max_repetitions: int

    def more(self, test: TestSpec, samples: Sequence[Sample]) -> int:
        """Samples to take next; 0 when the target or the cap is reached."""
        n = len(samples)
        if n >= self.max_repetitions or relative_ci(test, samples) <= self.target_ci:
            return 0
        cv = summarize(rates(test.tokens, [s.ns for s in samples])).cv
        wanted = next((k for k in range(n + 1, self.max_repetitions + 1)
                       if t95(k - 1) * cv / math.sqrt(k) <= self.target_ci), self.max_repetitions)
        return max(1, min(wanted - n, n, self.max_repetitions - n))

    def record(self, test: TestSpec, samples: Sequence[Sample], calls: int) -> dict:
        """What the runner decided, stored with the test."""
        achieved = relative_ci(test, samples)
        return {
            "target_ci": self.target_ci,
            "max_repetitions": self.max_repetitions,
            "repetitions": len(samples),
            "achieved_ci": None if math.isinf(achieved) else achieved,
            "stopped_by": "target" if achieved <= self.target_ci else "cap",
            "calls": calls,
        }
