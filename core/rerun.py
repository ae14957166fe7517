"""``pdx rerun``: repeat a stored run with exactly its configuration.

The stored run names everything that shapes a measurement: backend, engine
options, threads, workload (tests, repetitions, warm-up, seed, adaptive
target) and the model by content hash. The new run is linked to the old one
through ``parent_id``. Before anything is stored, the model's hash and the
engine's version, commit and resolved settings are compared with the old
run's: any difference ("drift") refuses the rerun, or with ``allow_drift``
is recorded in the new run's provenance.
"""

from __future__ import annotations

from pathlib import Path

from pdx.api import BenchConfig
from pdx.backend import EngineInfo
from pdx.errors import PdxError
from pdx.models import ModelInfo
from pdx.workload import Workload


def find_drift(run: dict, model: ModelInfo, engine: EngineInfo) -> dict[str, dict]:
    """What differs from the stored run: {field: {"was": ..., "now": ...}}."""
    pairs = {
        "model.sha256": (run["model"]["sha256"], model.sha256),
        "engine.name": (run["engine"]["name"], engine.engine),
        "engine.version": (run["engine"]["version"], engine.version),
        "engine.commit": (run["engine"]["commit"], engine.commit),
    }
    was, now = run["engine"]["settings"], engine.settings
    for key in sorted(set(was) | set(now)):
        pairs[f"engine.settings.{key}"] = (was.get(key), now.get(key))
    return {k: {"was": a, "now": b} for k, (a, b) in pairs.items() if a != b}


def describe(drift: dict[str, dict]) -> str:
    def short(value):
        return value[:12] if isinstance(value, str) and len(value) == 64 else value

    return ", ".join(f"{k} was {short(v['was'])!s}, now {short(v['now'])!s}" for k, v in drift.items())


def rerun_config(run: dict, allow_drift: bool = False, model: str | None = None,
                 tags: list[str] | None = None, argv: list[str] | None = None) -> BenchConfig:
    """The configuration that repeats ``run``; its ``verify`` enforces the drift policy."""
    if run.get("origin", "pdx") != "pdx":
        raise PdxError(f"run {run['id'][:12]} was imported from {run['origin']}; pdx reruns only runs it measured")
    path = model or run["model"]["path"]
    if not Path(path).exists():
        raise PdxError(f"model {path} of run {run['id'][:12]} is gone",
                       "give its new location with --model (its hash must match)")

    def verify(found: ModelInfo, engine: EngineInfo) -> dict:
        drift = find_drift(run, found, engine)
        if drift and not allow_drift:
            raise PdxError(f"cannot rerun {run['id'][:12]} as it was: {describe(drift)}",
                           "pass --allow-drift to run anyway and record what changed")
        return {"rerun_of": run["id"], "drift": drift}

    return BenchConfig(
        backend=run["backend"],
        model=path,
        workload=Workload.from_dict(run["workload"]),
        threads=run["threads"],
        options={k: str(v) for k, v in run["options"].items()},
        tags=list(tags or []),
        argv=argv,
        parent_id=run["id"],
        verify=verify,
    )
