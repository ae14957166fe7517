"""A backend whose engine is ``time.sleep``: a known cost per token, a work counter,
and switches that break one rule of the backend contract each (or, ``burst*``, act as a server
that streams every token of a decode test at once, as a busy one can).

A test double of a *backend*, not of an engine: the contract suite's own tests
need backends that break its rules on purpose, to show each check fails when
it should (and passes on the correct one). Every real backend runs the same
suite against its real engine (tests/test_contract_*.py).
"""

from __future__ import annotations

import sys
import time
import types
from importlib.metadata import EntryPoint, distribution
from typing import Iterator

from pdx.contract.backend import Availability, Backend, BackendConfig, EngineInfo, Sample
from pdx.contract.errors import PdxError
from pdx.domain.models import ModelInfo, identify
from pdx.domain.serving.records import RequestRecord, RequestsFailed
from pdx.domain.workload import TestSpec

TOKEN_S = 0.0002  # what one token costs the "engine"


class SleepBackend(Backend):
    name = "sleep"
    engine = "time.sleep"
    summary = "sleeps per token (pdx.testing's own tests)"
    model_formats = ("gguf",)
    options = {"mode": "which rule to break (tests/sleep_backend.py)",
               "engine_version": "the version the engine reports (an engine's history over versions)",
               "token_s": f"seconds one token costs (default {TOKEN_S})"}

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        self.mode = config.options.get("mode", "")
        self.token_s = float(config.options.get("token_s", TOKEN_S))
        self.tokens = 0  # the work counter: tokens "processed"
        self.bursts = 0  # tests refused as streamed in one burst
        self.model: ModelInfo | None = None

    @classmethod
    def availability(cls, options=None) -> Availability:
        return Availability(True, version=f"{time.get_clock_info('perf_counter').implementation}")

    def load(self, model: ModelInfo) -> EngineInfo:
        if self.mode == "traceback":
            with open(model.path, "rb") as fh:
                if len(fh.read()) < model.file_bytes:
                    raise ValueError("short read")
        else:
            identify(model.path)  # a ModelError (a PdxError) for a file that is not whole
        self.model = model
        return EngineInfo(engine=self.engine, version=self.config.options.get("engine_version", "1"),
                          settings={"threads": self.config.threads})

    def _work(self, tokens: int) -> None:
        self.tokens += tokens
        time.sleep(tokens * self.token_s)

    def _once(self, test: TestSpec) -> Sample:
        depth = 0 if self.mode == "ignore-depth" else test.depth
        start = time.perf_counter_ns()
        if depth and self.mode != "time-depth":
            self._work(depth * test.batch)
            start = time.perf_counter_ns()
        elif depth:
            self._work(depth * test.batch)
        self._work((test.n_prompt + test.n_gen) * test.batch)
        ns = time.perf_counter_ns() - start
        n_gen = test.n_gen * test.batch + (1 if self.mode == "extra-token" else 0)
        return Sample(ns=ns * 1000 if self.mode == "microseconds" else ns, n_prompt=test.n_prompt * test.batch,
                      n_gen=n_gen)

    def _burst(self, test: TestSpec) -> None:
        """As a server backend refuses a test whose tokens all arrived at once: the records travel with it."""
        short = self.mode == "burst-short"
        records = [RequestRecord(idx=i, n_prompt=test.n_prompt, max_tokens=test.n_gen + 1, first_ns=1000, end_ns=2000,
                                 events=[(1000, test.n_gen + (0 if short else 1))]) for i in range(test.batch)]
        raise RequestsFailed(f"{test.name}: every token arrived at once", records)

    def run(self, test: TestSpec, repetitions: int, warmup: int) -> Iterator[Sample]:
        if self.model is None:
            raise PdxError("sleep: load() must come before run()")
        if test.n_gen and (self.mode in ("burst", "burst-short") or (self.mode == "burst-once" and not self.bursts)):
            self.bursts += 1
            self._burst(test)
        warmup = 0 if self.mode == "skip-warmup" else warmup
        try:
            for i in range(warmup + repetitions):
                sample = self._once(test)
                if i >= warmup or self.mode == "yield-warmup":
                    yield sample
                if self.mode == "yield-warmup" and i + 1 == repetitions:
                    return
        except KeyboardInterrupt:
            if self.mode != "swallow-ctrl-c":
                raise

    def test_info(self) -> dict:
        return {"nan": float("nan")} if self.mode == "nan" else {}


def register_as_plugin(monkeypatch, module_name: str, with_pdx_plugins: bool = False) -> None:
    """SleepBackend registered through an entry point, as a plugin would be; alone, or beside pdx's own
    plugins (``with_pdx_plugins``: a site's pages register through the same hook). The caller resets the
    plugin manager after its test (``plugin_manager.reset()``)."""
    from pdx.base import plugin_manager

    module = types.ModuleType(module_name)
    module.pdx_register_backends = lambda register: register(SleepBackend)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    entry = EntryPoint("sleepy", module.__name__, "pdx")
    vars(entry).update(dist=distribution("pdx"))
    own = plugin_manager.entry_points
    chosen = (lambda group: [*own(group=group), entry]) if with_pdx_plugins else (lambda group: [entry])
    monkeypatch.setattr(plugin_manager, "entry_points", chosen)
    plugin_manager.reset()
