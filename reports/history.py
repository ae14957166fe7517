"""An engine's history: for one machine, model and backend, each test's runs in engine-version order,
with the steps :mod:`pdx.domain.stats.steps` finds in them.

Runs are ordered by the engine version they recorded (numbers inside a version compare as numbers:
b99 < b100, 0.9.2 < 0.10.0), then by date; when any run has no version, by the run's date alone,
since a version-less run has no place among versions. Each point is one run; its figure is the rate
of every stored repetition (t/s, higher is better: its mean and spread), so a step is judged against
the runs' own noise, not on one number per run. Serving tests (latency distributions) have no timeline yet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pdx.contract.errors import PdxError
from pdx.registry import Registry
from pdx.reports.gate import NothingCompared
from pdx.reports.sample_compare import DEFAULT_FACTOR
from pdx.reports.results import read_runs
from pdx.domain.stats.steps import Point, Step, detect_steps


@dataclass(frozen=True)
class HistoryPoint:
    """One run's figure in a timeline: the statistics of its rate over every stored repetition."""

    run_id: str
    label: str  # the engine version (and commit), or the run's date
    version: str | None
    commit: str | None
    created_at: str
    mean: float  # t/s
    stddev: float | None
    n: int
    ci95: float | None  # half-width; None for one sample

    @property
    def point(self) -> Point:
        return Point(self.label, self.mean, (self.stddev or 0.0) ** 2 / self.n if self.n > 1 else 0.0)

    def to_dict(self) -> dict:
        return {"run": self.run_id, "label": self.label, "version": self.version, "commit": self.commit,
                "created_at": self.created_at, "mean": self.mean, "ci95": self.ci95, "n": self.n}


@dataclass
class Timeline:
    """One test's points, oldest version first, and the steps between them."""

    test: str
    points: list[HistoryPoint]
    steps: list[Step] = field(default_factory=list)

    @property
    def latest(self) -> HistoryPoint:
        return self.points[-1]

    @property
    def best(self) -> HistoryPoint:
        return max(self.points, key=lambda p: p.mean)

    @property
    def newest_step(self) -> Step | None:
        return self.steps[-1] if self.steps else None

    def to_dict(self) -> dict:
        return {"test": self.test, "unit": "t/s", "points": [p.to_dict() for p in self.points],
                "latest": self.latest.run_id, "best": self.best.run_id, "steps": [s.to_dict() for s in self.steps]}


@dataclass
class History:
    """An engine's timelines on one machine and model."""

    hardware: str
    model: str
    backend: str
    engine: str
    ordered_by: str  # "version" or "date"
    factor: float
    timelines: list[Timeline]

    @property
    def regressions(self) -> list[tuple[str, Step]]:
        """The timelines whose newest step is a regression: what ``pdx check --history`` fails on."""
        return [(t.test, t.newest_step) for t in self.timelines if t.newest_step and t.newest_step.regression]

    def to_dict(self) -> dict:
        return {"hardware": self.hardware, "model": self.model, "backend": self.backend, "engine": self.engine,
                "ordered_by": self.ordered_by, "factor": self.factor,
                "timelines": [t.to_dict() for t in self.timelines]}


def version_key(version: str) -> tuple:
    """Natural order: the digit runs of a version compare as numbers (b99 < b100, 0.9 < 0.10)."""
    # ASCII digits only: a stored version is data, and int() refuses some of what \d matches ("²").
    return tuple((0, int(part), "") if part[0] in "0123456789" else (1, 0, part)
                 for part in re.findall(r"[0-9]+|[^0-9.\-_+]+", version))


def _label(run: dict, by_version: bool) -> str:
    engine = run.get("engine") or {}
    if not by_version:
        return run["created_at"][:19]
    commit = engine.get("commit")
    return f"{engine['version']} ({commit[:8]})" if commit else str(engine["version"])


def _one(runs: list[dict], what: str, key) -> str:
    found = sorted({key(r) for r in runs})
    if len(found) > 1:
        shown = ", ".join(found[:6]) + (", ..." if len(found) > 6 else "")
        raise PdxError(f"history: the runs selected span {len(found)} {what}s ({shown})",
                       f"narrow the selection to one {what} (--hardware, --model, --backend)")
    return found[0]


def build_history(runs: list[dict], tests: list[str] | None = None, factor: float = DEFAULT_FACTOR) -> History:
    """The timelines of ``runs`` (with their statistics), which must be of one machine, model and backend."""
    runs = [r for r in runs if r["status"] != "failed"]
    if not runs:
        raise PdxError("history: no run matches", "see `pdx runs` for what the registry holds")
    hw = _one(runs, "machine", lambda r: r["hardware"].get("name") or r["hardware"]["id"])
    mdl = _one(runs, "model", lambda r: r["model"].get("name") or r["model"]["sha256"])
    bk = _one(runs, "backend", lambda r: r["backend"])
    engine = _one(runs, "engine", lambda r: (r.get("engine") or {}).get("name") or "?")
    by_version = all((r.get("engine") or {}).get("version") for r in runs)
    runs = sorted(runs, key=lambda r: ((version_key(str(r["engine"]["version"])) if by_version else ()),
                                       r["created_at"]))
    series: dict[str, list[HistoryPoint]] = {}
    for run in runs:
        engine_record = run.get("engine") or {}
        for test in run["tests"]:
            rate = (test.get("stats") or {}).get("rate") or {}
            if (tests and test["name"] not in tests) or test.get("kind") == "serve" or not rate.get("mean"):
                continue
            series.setdefault(test["name"], []).append(HistoryPoint(
                run_id=run["id"], label=_label(run, by_version), version=engine_record.get("version"),
                commit=engine_record.get("commit"), created_at=run["created_at"], mean=rate["mean"],
                stddev=rate.get("stddev"), n=rate.get("n") or 1, ci95=rate.get("ci95")))
    if tests and not series:
        raise PdxError(f"history: no run measured {', '.join(tests)}", "see `pdx show RUN` for a run's test names")
    timelines = [Timeline(name, points, detect_steps([p.point for p in points], factor))
                 for name, points in series.items()]
    return History(hw, mdl, bk, engine, "version" if by_version else "date", factor, timelines)


def history(registry: Registry, hardware: str | None = None, model: str | None = None, backend: str | None = None,
            tests: list[str] | None = None, factor: float = DEFAULT_FACTOR) -> History:
    """The timelines of the runs the filters select, which must be of one machine, model and backend."""
    return build_history(read_runs(registry, hardware=hardware, model=model, backend=backend), tests, factor)


def history_of_run(registry: Registry, run_ref: str | None = None, factor: float = DEFAULT_FACTOR) -> History:
    """The history of a run's machine, model and backend (default: the newest run's); ``pdx check
    --history`` gates on it. A history with no timeline of three runs has no verdict."""
    ids = [run_ref] if run_ref else registry.run_ids(limit=1)
    if not ids:
        raise NothingCompared("check --history: the registry holds no run", "run `pdx bench` first")
    run = registry.get_run(ids[0])
    found = history(registry, run["hardware"]["id"], run["model"]["sha256"], run["backend"], factor=factor)
    if not any(len(t.points) >= 3 for t in found.timelines):
        raise NothingCompared(f"check --history: fewer than three runs of {found.engine} on {found.hardware} "
                              f"with {found.model} measured any one test", "a history needs three runs or more")
    return found
