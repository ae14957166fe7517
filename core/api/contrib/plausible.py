"""Rates a run may hold on a shared site: the check ``pdx submit`` refuses by and ``pdx hub verify``
rejects by, one function, so the two cannot disagree.

A rate is implausible above its stored ceiling by more than a tolerance, and a stored mean (the
ceiling's ``measured``, the ``avg_ts`` of an imported llama-bench record) is wrong when its
samples do not give it: every mean of a test is derived from its samples in one place
(:func:`pdx.domain.stats.derived.derive_stats`).
"""

from __future__ import annotations

from pdx.domain.stats.derived import derive_stats

DEFAULT_TOLERANCE = 0.10  # above the ceiling by more than this is not a measurement
SAMPLE_TOLERANCE = 0.01  # a stored mean further than this from its samples' was not made from them


def rate_problems(run: dict, tolerance: float = DEFAULT_TOLERANCE) -> list[str]:
    """A run record's implausible rates: above a ceiling, or a stored mean its samples do not give."""
    found = []
    for test in run["tests"]:
        if test.get("kind") == "serve" or not test.get("samples"):
            continue
        mean = derive_stats(test)["rate"]["mean"]
        name = f"run {run['id'][:12]} {test['name']}"
        ceilings = test.get("ceilings") or {}
        ceiling = ceilings.get("ceiling")
        if isinstance(ceiling, (int, float)) and ceiling > 0 and mean > ceiling * (1 + tolerance):
            found.append(f"{name}: {mean:.4g} t/s is {mean / ceiling:.0%} of its ceiling {ceiling:.4g} t/s "
                         f"(more than {tolerance:.0%} above it)")
        stored = {"the ceiling's measured rate": ceilings.get("measured"),
                  "llama-bench's avg_ts": _summary_of_samples(run, test)}
        for what, value in stored.items():
            if isinstance(value, (int, float)) and abs(value - mean) > SAMPLE_TOLERANCE * mean:
                found.append(f"{name}: {what} {value:.4g} t/s is not its samples' mean {mean:.4g} t/s")
    return found


def _summary_of_samples(run: dict, test: dict) -> float | None:
    """llama-bench's avg_ts where it summarises the samples stored: an imported record's. A pdx run
    of llama-bench stores none (an adaptive test is several llama-bench calls, and pdx drops extra
    warm-ups); one made by an earlier pdx kept its last call's, which is no figure of these samples."""
    return None if run.get("origin", "pdx") == "pdx" else (test.get("engine") or {}).get("avg_ts")
