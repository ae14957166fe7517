"""Generated runs for report tests and the publish benchmark, stored through the
registry's public API exactly as ``pdx bench`` stores real ones.

The figures are made up: for a machine in the hardware catalog, each test runs
at 40-80% of the ceiling pdx.domain.ceilings computes for it (and the run stores those
ceilings, as pdx bench does); for one that is not (two CPUs here), at a
plausible rate and with no ceilings. Tests that need real measurements use
real llama.cpp runs instead.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from datetime import datetime, timedelta, timezone

from pdx.domain import ceilings
from pdx.measure import ceiling_sources as sources
from pdx.contract.backend import EngineInfo, Sample
from pdx.contract.errors import PdxError
from pdx.domain.hardware import catalog
from pdx.domain.models import ModelInfo
from pdx.registry import Registry, RunStart
from pdx.reports.results import derive_stats
from pdx.measure.runner import TestOutcome
from pdx.domain.workload import TestSpec

HARDWARE = ["Apple M2 Max", "Apple M3 Ultra", "NVIDIA H100 SXM", "NVIDIA RTX 4090", "AMD EPYC 9654",
            "Intel Xeon Platinum 8480", "AMD Ryzen AI Max+ 395", "NVIDIA L40S", "Apple M4 Pro", "NVIDIA A100 80GB"]
TESTS = [TestSpec(512, 0), TestSpec(0, 128), TestSpec(512, 0, depth=4096), TestSpec(0, 128, depth=4096),
         TestSpec(0, 128, batch=4), TestSpec(0, 128, batch=8)]
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def hardware(name: str, index: int) -> dict:
    gpu = name.startswith("NVIDIA")
    return {"id": hashlib.sha256(name.encode()).hexdigest()[:16], "kind": "gpu" if gpu else "cpu", "name": name,
            "cpu": {"name": name if not gpu else "Intel Xeon", "physical_cores": 16, "logical_cores": 32,
                    "memory_bytes": 64 * 2**30, "arch": "x86_64"},
            "gpus": [{"name": name, "memory_bytes": 80 * 2**30}] if gpu else []}


def model(name: str, index: int, n_params: int = 8_000_000_000) -> ModelInfo:
    return ModelInfo(path=f"/models/{name}.gguf", name=name, format="gguf", architecture="llama",
                     n_params=n_params, dtype="Q4_0", n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128,
                     n_embd=4096, n_ff=14336, n_vocab=128256, n_ctx_train=8192, file_bytes=n_params // 2,
                     sha256=hashlib.sha256(f"{name}-{index}".encode()).hexdigest())


ENVIRONMENT = {"hostname": "bench", "os": "Linux", "python": "3.11.7", "pdx_version": "0.1.0",
               "platform": "Linux-x86_64", "command": "pdx bench", "packages": {}}


def _figures(hw: dict, mdl: ModelInfo, threads: int):
    """Catalog figures and their record for a machine pdx knows; (None, None) for one it does not."""
    try:
        catalog.lookup(hw["name"])
    except PdxError:
        return None, None
    figures, basis = sources.resolve(hw, mdl.to_dict(), threads, name=hw["name"])
    model_figures = ceilings.model_figures(mdl.to_dict())
    return (model_figures, figures), basis | ceilings.predictions(model_figures, figures)


def add_run(registry: Registry, hw: dict, mdl: ModelInfo, backend: str, when: datetime, rng: random.Random,
            tests=TESTS, repetitions: int = 5, tags=(), threads: int = 8, speed: float = 1.0,
            options: dict | None = None, command: str = "pdx bench", share: float | None = None) -> str:
    """One complete run; ``speed`` scales every rate of a machine without ceilings, ``share`` (default:
    drawn from 0.4-0.8) sets every rate's fraction of the ceiling of a machine with them (above 1: a
    run the ceilings flag ABOVE, as pdx bench would store it)."""
    run_id = uuid.uuid4().hex
    judged, basis = _figures(hw, mdl, threads)
    registry.start_run(RunStart(
        id=run_id, backend=backend, engine=EngineInfo("llama.cpp", "b1", "0c1e570", {"threads": threads}),
        model=mdl, hardware=hw, environment=ENVIRONMENT, environment_id="env-bench",
        workload={"tests": [t.name for t in tests], "repetitions": repetitions, "warmup": 1, "seed": 42},
        threads=threads, options=options or {}, command=command, pdx_version="0.1.0", tags=list(tags), created_at=when,
        ceiling_basis=basis))
    share = rng.uniform(0.4, 0.8) if share is None else share
    for ordinal, test in enumerate(tests):
        ceiling = ceilings.test_ceilings(test.to_dict(), None, *judged)["ceiling"] if judged else None
        if ceiling:  # a chip without published FLOP/s has no prefill ceiling
            rate = ceiling * share
        else:
            rate = (2000.0 if test.kind == "pp" else 60.0) * speed / (1 + test.depth / 8192) * test.batch ** 0.7
        samples = []
        for _ in range(repetitions):
            ns = int((test.n_prompt + test.n_gen) * test.batch * 1e9 / (rate * rng.uniform(0.95, 1.05)))
            samples.append(Sample(ns=ns, n_prompt=test.n_prompt * test.batch, n_gen=test.n_gen * test.batch))
        outcome = TestOutcome(ordinal=ordinal, test=test, warmup=1, samples=samples, started_at=when,
                              finished_at=when)
        if judged:
            stats = derive_stats({**test.to_dict(), "samples": [{"ns": x.ns} for x in samples]})
            outcome.ceilings = ceilings.test_ceilings(test.to_dict(), stats, *judged)
        registry.save_test(run_id, outcome.to_record())
    registry.finish_run(run_id, "complete")
    return run_id


def fill(registry: Registry, n_runs: int, n_hardware: int = 10, n_models: int = 25, seed: int = 0,
         tests=TESTS, repetitions: int = 5) -> list[str]:
    """``n_runs`` runs spread over hardware x model x 2 backends, oldest first."""
    rng = random.Random(seed)
    hws = [hardware(HARDWARE[i % len(HARDWARE)] + ("" if i < len(HARDWARE) else f" #{i}"), i)
           for i in range(n_hardware)]
    models = [model(f"llama-{i}-8b-q4_0", i + 1) for i in range(n_models)]
    configs = [(h, m, b) for h in hws for m in models for b in ("llamacpp-bench", "llamacpp-python")]
    ids = []
    for i in range(n_runs):
        h, m, b = configs[i % len(configs)]
        speed = 1 + hws.index(h) * 0.3
        ids.append(add_run(registry, h, m, b, START + timedelta(minutes=i), rng, tests, repetitions,
                           speed=speed))
    return ids


def filled_registry(folder, n_runs: int) -> str:
    """The URL of a new SQLite registry in ``folder`` holding ``n_runs`` runs of :func:`fill` (one
    machine, one model)."""
    from pdx.registry import Registry

    url = f"sqlite:///{folder / 'registry.sqlite'}"
    store = Registry(url)
    try:
        fill(store, n_runs, n_hardware=1, n_models=1)
    finally:
        store.close()
    return url


FOUR = [("Apple M2 "
         "Max", "llamacpp-bench"), ("NVIDIA H100 SXM", "llamacpp-bench"), ("Apple M3 Ultra", "llamacpp-python"),
        ("NVIDIA RTX 4090", "llamacpp-python")]


def four_runs(url: str) -> list[dict]:
    """Four runs of one model on four machines and two engines, read back whole: a report sets them side by side."""
    from pdx.reports.results import read_run

    registry = Registry(url)
    return [read_run(registry, add_run(registry, hardware(name, i), model("llama-3.1-8b-instruct-q4_0", i), backend,
                                       START, random.Random(i))) for i, (name, backend) in enumerate(FOUR)]
