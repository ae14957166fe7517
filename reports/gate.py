"""``pdx check``: the regression gate for CI jobs.

The baseline is a run (id or prefix) or a tag. The run checked is the one
named, else the newest other run of the same model and backend (without
that tag, when the baseline is a tag: CI can tag every baseline run). A tag
resolves to its newest run of the checked run's model and backend that is
older than the checked run, never the run itself. Every test is compared on
raw samples (:mod:`pdx.reports.sample_compare`); the gate fails when any test is
significantly slower by more than the factor, or failed where the baseline
passed. A gate that compared nothing has no verdict: it says why and exits
with its own code, so CI never reads it as a pass; ``pdx compare`` goes
through the same rule (:func:`verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

from pdx.contract.errors import PdxError
from pdx.registry import Registry
from pdx.reports.sample_compare import DEFAULT_ALPHA, DEFAULT_FACTOR, TestComparison, compare_runs
from pdx.reports.results import read_run, read_runs

# `pdx check`'s exit codes (2, a usage error or an unknown run or tag, is every PdxError's).
EXIT_PASSED = 0
EXIT_REGRESSION = 1
EXIT_NOTHING_COMPARED = 3

_SEARCH = 50  # newest runs looked through for a candidate
_LISTED = 8  # test names a one-line message lists per run


class NothingCompared(PdxError):
    """The gate found no pair of runs, or no test both runs measured: it has no verdict."""

    exit_code = EXIT_NOTHING_COMPARED


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

    @property
    def compared(self) -> list[TestComparison]:
        """The tests with a verdict: measured by both runs (or failed in the new one)."""
        return [c for c in self.comparisons if c.mark != "x"]

    def to_dict(self) -> dict:
        return {
            "baseline": self.baseline["id"],
            "run": self.run["id"],
            "factor": self.factor,
            "alpha": self.alpha,
            "passed": not self.regressions,
            "tests": [c.to_dict() for c in self.comparisons],
        }


def _tagged(registry: Registry, ref: str) -> bool:
    return bool(registry.run_ids(tag=ref, limit=1))


def _when(run: Mapping[str, Any]) -> datetime:
    return datetime.fromisoformat(run["created_at"])


def _label(run: dict) -> str:
    return f"run {run['id'][:12]} ({run['created_at'][:19]})"


def _names(run: dict) -> str:
    names = [t["name"] for t in run["tests"]]
    more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
    return ", ".join(names[:_LISTED]) + more if names else "no tests"


def _setup(run: Mapping[str, Any]) -> tuple[str, str]:
    """A run's backend and model file (a model known only by its name: that name)."""
    return run["backend"], run["model"].get("sha256") or run["model"]["name"]


def tagged_baseline(registry: Registry, tag: str, run: dict) -> dict:
    """The newest run tagged ``tag`` of ``run``'s model and backend that is older than ``run``."""
    newer_than = _when(run)
    for run_id in registry.run_ids(tag=tag, backend=run["backend"], model=run["model"].get("sha256")):
        if run_id == run["id"]:
            continue
        found = registry.get_run(run_id)  # newest first: the first older one is the baseline
        if found["status"] != "running" and _setup(found) == _setup(run) and _when(found) < newer_than:
            return read_run(registry, run_id)
    raise NothingCompared(f"no run tagged {tag!r} of model {run['model']['name']} on backend {run['backend']} "
                          f"is older than {_label(run)}",
                          "tag a run made before it as the baseline, or name the baseline's run id")


def find_candidate(registry: Registry, like: dict, tag: str | None = None) -> dict:
    """The newest other finished run of ``like``'s model and backend (without ``tag``)."""
    found = read_runs(registry, backend=like["backend"], model=like["model"]["sha256"], limit=_SEARCH)
    for run in found:
        if run["id"] != like["id"] and run["status"] != "running" and tag not in run["tags"]:
            return read_run(registry, run["id"])
    raise NothingCompared(f"no other run of model {like['model']['name']} on backend {like['backend']} "
                          f"to check against {'tag ' + repr(tag) if tag else 'baseline ' + like['id'][:12]}",
                          "run `pdx bench` first, or name the run")


def _read(registry: Registry, ref: str) -> dict:
    try:
        return read_run(registry, ref)
    except PdxError:
        raise PdxError(f"no run or tag {ref!r} in registry {registry.display_url}",
                       "give a run id (see `pdx runs`) or a tag given with --tag") from None


def nothing_compared(result: CheckResult) -> NothingCompared:
    """Why no test of the run compared with the baseline, in one line."""
    base, run = result.baseline, result.run
    common = {t["name"] for t in base["tests"]} & {t["name"] for t in run["tests"]}
    if not common:
        why = (f"{_label(run)} and baseline {_label(base)} have no test in common "
               f"(baseline: {_names(base)}; run: {_names(run)})")
    else:
        notes = "; ".join(f"{c.name}: {c.note}" for c in result.comparisons if c.name in common)
        why = f"no test of {_label(run)} could be compared with baseline {_label(base)} ({notes})"
    return NothingCompared(f"nothing compared: {why}", "the gate has no verdict")


def verdict(baseline: dict, run: dict, factor: float = DEFAULT_FACTOR, alpha: float = DEFAULT_ALPHA) -> CheckResult:
    """``run`` compared with ``baseline`` test by test: the one rule ``pdx check`` and ``pdx compare``
    share, so neither gives a verdict from nothing (:class:`NothingCompared` when no test compared)."""
    result = CheckResult(baseline, run, compare_runs(baseline, run, factor, alpha), factor, alpha)
    if not result.compared:
        raise nothing_compared(result)
    return result


def check(registry: Registry, baseline_ref: str, run_ref: str | None = None,
          factor: float = DEFAULT_FACTOR, alpha: float = DEFAULT_ALPHA) -> CheckResult:
    """Gate ``run_ref`` (default: the newest candidate) on the baseline; :class:`NothingCompared`
    when there is no pair of runs or no test both measured."""
    if factor < 1:
        raise PdxError(f"--factor {factor} is below 1", "give a minimum slowdown such as 1.05 (5%)")
    tag = baseline_ref if _tagged(registry, baseline_ref) else None
    if tag:
        run = read_run(registry, run_ref) if run_ref else find_candidate(
            registry, read_run(registry, registry.run_ids(tag=tag, limit=1)[0]), tag)
        baseline = tagged_baseline(registry, tag, run)
    else:
        baseline = _read(registry, baseline_ref)
        run = read_run(registry, run_ref) if run_ref else find_candidate(registry, baseline)
    if run["id"] == baseline["id"]:
        raise PdxError(f"run {run['id'][:12]} is the baseline itself", "name another run to check")
    return verdict(baseline, run, factor, alpha)
