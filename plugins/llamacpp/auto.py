"""``llamacpp``: the llama-bench driver when a binary is found, else in-process."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator, Mapping

from pdx.contract.backend import Availability, Backend, BackendConfig, EngineInfo, Sample
from pdx.domain.models import ModelInfo
from pdx.plugins.llamacpp.bench_driver import LlamaBench
from pdx.plugins.llamacpp.inprocess import LlamaPython
from pdx.plugins.llamacpp.locate import INSTALL_HINT
from pdx.contract import build
from pdx.domain.workload import TestSpec


class LlamaCpp(Backend):
    name = "llamacpp"
    engine = "llama.cpp"
    summary = "llama-bench if found, else in-process (llama-cpp-python)"
    model_formats = ("gguf",)
    options = LlamaBench.options

    @classmethod
    def availability(cls, options: Mapping[str, str] | None = None) -> Availability:
        bench = LlamaBench.availability(options)
        if bench.available or (options or {}).get("llama_bench"):
            return bench  # a binary the user named is used or refused, never silently replaced
        python = LlamaPython.availability()
        if python.available:
            return python
        return Availability(False, f"{bench.reason}; {python.reason}", INSTALL_HINT)

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        use_bench = LlamaBench.availability(config.options).available
        if not use_bench:
            config = replace(config, options={k: v for k, v in config.options.items() if k != "llama_bench"})
        self.delegate: Backend = LlamaBench(config) if use_bench else LlamaPython(config)

    def load(self, model: ModelInfo) -> EngineInfo:
        return self.delegate.load(model)

    def run(self, test: TestSpec, repetitions: int, warmup: int) -> Iterator[Sample]:
        return self.delegate.run(test, repetitions, warmup)

    def unsupported(self, test: build.Shape) -> str | None:
        return self.delegate.unsupported(test)

    def test_info(self) -> dict:
        return self.delegate.test_info()

    def close(self) -> None:
        self.delegate.close()
