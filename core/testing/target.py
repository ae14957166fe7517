"""What the contract suite measures, and the live backend it measures.

A :class:`Target` names a backend (registered name or class), a model and
settings; :class:`Params` sizes the tests; a :class:`Harness` opens the
backend once, lends it to every check, counts the engine work where a
counter exists, and closes it.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

from pdx.base import plugin_manager
from pdx.contract.backend import Backend, BackendConfig, EngineInfo, Sample
from pdx.domain.models import ModelInfo, identify
from pdx.domain.serving.records import RequestsFailed
from pdx.domain.synth import get_shape, write_gguf, write_hf
from pdx.testing import processes
from pdx.testing.counters import WorkCounter, default_counter

Counter = Callable[[Backend], "WorkCounter | None"]

# The synthetic model for a server backend: wider than "tiny", so tokens take long enough to reach
# the client one by one on a busy machine, and with a 32000-token vocabulary, in which the 256 byte
# tokens are rare (random weights emit them; a server streaming text holds a token that ends
# mid-UTF-8 back until the text is whole again, so a run of them arrives as one event).
STREAMING_DIMS = {"n_embd": 512, "n_layers": 4, "n_heads": 8, "n_kv_heads": 8, "n_ff": 1408, "n_vocab": 32000}
# Tries of a test a server streamed in one burst (a server or client held up by other work on the machine
# sends or reads every token at once, and pdx rightly refuses to time that), each with fresh prompts.
BURST_TRIES = 3


@dataclass(frozen=True)
class Target:
    backend: str | type[Backend]
    model: str | None = None  # a path; None: the server's own (with a url), else a synthetic "tiny" model
    options: Mapping[str, str] = field(default_factory=dict)
    threads: int | None = 1
    api_key: str | None = field(default=None, repr=False)
    # The synthetic model's dims over "tiny" (None: STREAMING_DIMS for a server backend, else none).
    model_dims: Mapping[str, int] | None = None


@dataclass(frozen=True)
class Params:
    n_prompt: int = 32
    n_gen: int = 16
    depth: int = 512
    batch: int = 2  # 1: no batched tests
    repetitions: int = 2
    warmup: int = 1
    cancel_gen: int = 128  # the decode test a Ctrl-C lands in
    broken_model: bool = True  # load a truncated copy of the model: it must fail the pdx way
    bad_options: Mapping[str, str] = field(default_factory=dict)  # each must be refused with a PdxError


def resolve_backend(backend: str | type[Backend]) -> type[Backend]:
    if isinstance(backend, str):
        return plugin_manager.get_backend(backend)
    return backend


def synthetic_model(cls: type[Backend], dims: Mapping[str, int] | None, workdir: Path) -> ModelInfo:
    """A tiny random-weight model in the backend's first format, written once per work folder."""
    fmt, dtype = cls.model_formats[0], cls.default_dtype
    dims = (STREAMING_DIMS if cls.serves else {}) if dims is None else dims
    if fmt not in ("gguf", "hf"):
        raise AssertionError(f"pdx.testing writes gguf and hf models only; give {cls.name}'s test a {fmt} model")
    shape = get_shape("tiny").with_dims(**dims)
    key = hashlib.sha256(json.dumps([shape.to_dict(), fmt, dtype]).encode()).hexdigest()[:10]
    path = workdir / (f"tiny-{key}-{dtype}" if fmt == "hf" else f"tiny-{key}-{dtype}.gguf")
    if not path.exists():
        (write_hf if fmt == "hf" else write_gguf)(shape, dtype, path)
    return identify(path)


@dataclass
class RunResult:
    samples: list[Sample]
    wall_ns: int  # from the call of run() to its end
    at_yield: list[tuple[int, int | None]]  # (ns since the call, work done) as each sample arrived
    work: int | None  # units of work the whole call did
    test_info: dict
    # Set when the server streamed the test's tokens in one burst in every try: the backend's refusal,
    # holding the request records (samples is then empty).
    burst: RequestsFailed | None = None

    @property
    def retried(self) -> int:
        """Samples a server backend sent again because their tokens came in one burst (its work counter
        counted those tries too)."""
        return int(self.test_info.get("burst_retries") or 0) if isinstance(self.test_info, dict) else 0


def in_one_burst(exc: BaseException) -> bool:
    """Whether a server backend refused a sample only because its tokens arrived at once: every request
    it hands on is whole (a failed request is a failure, not a timing refusal)."""
    return isinstance(exc, RequestsFailed) and bool(exc.requests) and all(r.ok for r in exc.requests)


class Harness:
    def __init__(self, target: Target, params: Params, workdir: Path, counter: Counter = default_counter) -> None:
        self.target, self.params, self.workdir = target, params, Path(workdir)
        self.cls = resolve_backend(target.backend)
        self.make_counter = counter
        self._model: ModelInfo | None = None
        self._backend: Backend | None = None
        self.info: EngineInfo | None = None
        self.counter: WorkCounter | None = None
        self.before: processes.Snapshot | None = None  # our processes before the backend existed
        self.loaded: processes.Snapshot | None = None  # and once it was loaded

    def config(self, **options: str) -> BackendConfig:
        return BackendConfig(threads=self.target.threads, options=dict(self.target.options) | options,
                             api_key=self.target.api_key)

    @property
    def model(self) -> ModelInfo:
        if self._model is None:
            if self.target.model:
                self._model = identify(self.target.model)
            else:
                served = self.cls.served_model(self.config())
                self._model = served or synthetic_model(self.cls, self.target.model_dims, self.workdir)
        return self._model

    @property
    def backend(self) -> Backend:
        """The backend, made and loaded on first use (again after :meth:`close`)."""
        if self._backend is None:
            model = self.model
            self.before = processes.snapshot()
            self._backend = self.cls(self.config())
            self.info = self._backend.load(model)
            self.loaded = processes.snapshot()
            self.counter = self.make_counter(self._backend)
        return self._backend

    def work(self) -> int | None:
        return self.counter() if self.counter else None

    def run(self, test, repetitions: int, warmup: int) -> RunResult:
        """``backend.run`` consumed and timed; asked again (up to ``BURST_TRIES`` in all) while the server
        streams the test in one burst, and then the refusal is handed back in ``burst``."""
        for _ in range(BURST_TRIES):
            backend = self.backend
            first = self.work()
            samples, at_yield = [], []
            start = time.perf_counter_ns()
            try:
                for sample in backend.run(test, repetitions, warmup):
                    done = self.work()
                    at_yield.append((time.perf_counter_ns() - start, None if first is None else done - first))
                    samples.append(sample)
            except RequestsFailed as exc:
                if not in_one_burst(exc):
                    raise
                burst = exc
                continue
            wall = time.perf_counter_ns() - start
            work = None if first is None else self.work() - first
            return RunResult(samples, wall, at_yield, work, backend.test_info())
        return RunResult([], time.perf_counter_ns() - start, at_yield, None, backend.test_info(), burst)

    def close(self) -> None:
        if self._backend is not None:
            backend, self._backend = self._backend, None
            backend.close()


def truncated(model: ModelInfo, workdir: Path) -> ModelInfo:
    """The same model with its weights cut in half: identified as it was, unloadable by any engine."""
    source = Path(model.path)
    if source.is_dir():
        target = workdir / f"{source.name}-truncated"
        target.mkdir(exist_ok=True)
        for item in source.iterdir():
            data = item.read_bytes()
            (target / item.name).write_bytes(data[: len(data) // 2] if item.suffix == ".safetensors" else data)
    else:
        target = workdir / f"{source.stem}-truncated{source.suffix}"
        data = source.read_bytes()
        target.write_bytes(data[: len(data) // 2])
    return replace(model, path=str(target))
