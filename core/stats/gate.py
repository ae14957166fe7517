"""``pdx check``: the regression gate for CI jobs.

The baseline is a run (id or prefix) or a tag (its newest run). The run
checked is the newest other run of the same model and backend (without that
tag, when the baseline is a tag: CI can tag every baseline run), unless one
is named. Every test is compared on raw samples (:mod:`pdx.stats.compare`); the gate
fails when any test is significantly slower by more than the factor, or
failed where the baseline passed.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdx.stats.compare import DEFAULT_ALPHA, DEFAULT_FACTOR, TestComparison, compare_runs
from pdx.errors import PdxError
from pdx.registry import Registry
from pdx.stats.results import read_run, read_runs

_SEARCH = 50  # newest runs looked through for a candidate


@dataclass
class CheckResult:
    baseline: dict
    run: dict
    comparisons: list[TestComparison]
    factor: float
    alpha: float

    @property
    def regressions(self) -> list[TestComparison]:
        return [c for c in self.comparisons if c.regression]

    def to_dict(self) -> dict:
        return {
            "baseline": self.baseline["id"],
            "run": self.run["id"],
            "factor": self.factor,
            "alpha": self.alpha,
            "passed": not self.regressions,
            "tests": [c.to_dict() for c in self.comparisons],
        }


def find_baseline(registry: Registry, ref: str) -> tuple[dict, str | None]:
    """(run, tag): a tag's newest run, else the run with that id (prefix)."""
    tagged = registry.run_ids(tag=ref, limit=1)
    if tagged:
        return read_run(registry, tagged[0]), ref
    try:
        return read_run(registry, ref), None
    except PdxError:
        raise PdxError(f"no run or tag {ref!r} in registry {registry.display_url}",
                       "give a run id (see `pdx runs`) or a tag given with --tag") from None


def find_candidate(registry: Registry, baseline: dict, tag: str | None = None) -> dict:
    found = read_runs(registry, backend=baseline["backend"], model=baseline["model"]["sha256"], limit=_SEARCH)
    for run in found:
        if run["id"] != baseline["id"] and run["status"] != "running" and tag not in run["tags"]:
            return read_run(registry, run["id"])
    raise PdxError(f"no other run of model {baseline['model']['name']} on backend {baseline['backend']} "
                   f"to check against baseline {baseline['id'][:12]}", "run `pdx bench` first, or name the run")


def check(registry: Registry, baseline_ref: str, run_ref: str | None = None,
          factor: float = DEFAULT_FACTOR, alpha: float = DEFAULT_ALPHA) -> CheckResult:
    if factor < 1:
        raise PdxError(f"--factor {factor} is below 1", "give a minimum slowdown such as 1.05 (5%)")
    baseline, tag = find_baseline(registry, baseline_ref)
    run = read_run(registry, run_ref) if run_ref else find_candidate(registry, baseline, tag)
    if run["id"] == baseline["id"]:
        raise PdxError(f"run {run['id'][:12]} is the baseline itself", "name another run to check")
    return CheckResult(baseline, run, compare_runs(baseline, run, factor, alpha), factor, alpha)
