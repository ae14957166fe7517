"""``llamacpp-python``: llama.cpp in-process through llama-cpp-python's
low-level API, with llama-bench's semantics.

pp N: decode the N prompt tokens of each sequence in ``n_batch`` chunks, timed
until ``llama_synchronize`` returns after the last chunk. tg N: N steps of one
token per sequence, each synchronised. Depth: that many tokens per sequence
decoded first, untimed, after the KV cache is cleared. Every id comes from
:mod:`pdx.domain.prompt_stream`; like llama-bench, each decode step is fed the
stream's next id, not the token the step before produced. Unlike llama-bench this
path also runs several sequences at once (``/bN`` tests) and times the two
phases of a pp+tg test apart.
"""

from __future__ import annotations

import atexit
import collections
import ctypes
import sys
from dataclasses import dataclass
import time
from types import ModuleType
from typing import Iterator, Mapping

from pdx.contract.backend import Availability, Backend, BackendConfig, EngineInfo, Sample
from pdx.measure.environment import installed_version
from pdx.domain.engine_version import llama_cpp_version
from pdx.contract.errors import ModelError, PdxError
from pdx.domain.models import ModelInfo
from pdx.plugins.llamacpp import where
from pdx.plugins.llamacpp.locate import BINDINGS_HINT, bindings_lib_dir
from pdx.plugins.llamacpp.settings import OPTIONS, parse_settings
from pdx.domain.prompt_stream import Prompts, PromptStream
from pdx.domain.workload import TestSpec

_FLASH = {"auto": -1, "off": 0, "on": 1}
# ggml type ids of the KV-cache types (ggml.h's enum ggml_type).
_GGML_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "iq4_nl": 20, "bf16": 30}

_log_lines: collections.deque[str] = collections.deque(maxlen=50)
_placement_lines: list[str] = []  # a model load's lines saying where it ran (where.MARKERS): past the last 50
_log_callback = None  # llama.cpp keeps a raw pointer: the ctypes object must outlive every call


def _import_llama_cpp() -> ModuleType:
    bindings_lib_dir()
    import llama_cpp

    return llama_cpp


def _close_bindings_devnull() -> None:
    """llama-cpp-python opens /dev/null twice at import and never closes it, which Python reports as
    two ResourceWarnings as every pdx command that imported it exits; close them first."""
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        file = getattr(utils, name, None)
        if file is not None and not file.closed:
            file.close()


atexit.register(_close_bindings_devnull)


def _quiet_logs(lc) -> None:
    """Keep llama.cpp's log for error messages instead of printing it."""
    global _log_callback
    if _log_callback is None:
        def sink(level, text, user_data):
            line = text.decode(errors="replace").rstrip()
            _log_lines.append(line)
            if any(marker in line for marker in where.MARKERS):
                _placement_lines.append(line)

        _log_callback = lc.llama_log_callback(sink)
        lc.llama_log_set(_log_callback, ctypes.c_void_p(0))


Item = tuple[int, int, int, bool]  # one token of a llama_batch: (id, position, sequence, logits wanted)


@dataclass(frozen=True)
class Feed:
    """What one repetition hands llama_decode: the depth (untimed), the prompt, then one batch per step."""

    depth: list[Item]
    prompt: list[Item]
    steps: list[list[Item]]


def _items(rows: list[list[int]], start: int) -> list[Item]:
    """Row ``s`` holds sequence s's ids, placed from position ``start``; logits for each row's last."""
    return [(token, start + i, seq, i == len(row) - 1) for seq, row in enumerate(rows) for i, token in enumerate(row)]


def feed(test: TestSpec, prompts: Prompts) -> Feed:
    start = test.depth + test.n_prompt
    steps = [[(token, start + step, seq, True) for seq, token in enumerate(tokens)]
             for step, tokens in enumerate(zip(*prompts.decode))]
    return Feed(_items([prompts.depth] * test.batch if test.depth else [], 0),
                _items(prompts.prompts if test.n_prompt else [], test.depth), steps)


def _last_log() -> str:
    lines = [line for line in _log_lines if line.strip()]
    return lines[-1].strip() if lines else "no detail from llama.cpp"


class LlamaPython(Backend):
    name = "llamacpp-python"
    engine = "llama.cpp"
    summary = "in-process via llama-cpp-python (batches, phase split)"
    model_formats = ("gguf",)
    options = OPTIONS

    @classmethod
    def availability(cls, options: Mapping[str, str] | None = None) -> Availability:
        try:
            lc = _import_llama_cpp()
        except ImportError:
            return Availability(False, "llama-cpp-python is not installed", BINDINGS_HINT)
        except Exception as exc:  # the bindings load libllama at import; any failure lands here
            return Availability(False, f"llama-cpp-python cannot load llama.cpp: {exc}", BINDINGS_HINT)
        return Availability(True, version=f"llama-cpp-python {lc.__version__}")

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        self.settings = parse_settings(config, self.option_values)
        if self.settings.n_cpu_moe:
            raise PdxError("-o n_cpu_moe: llama.cpp's library takes no such setting (llama-bench and llama-server "
                           "turn it into tensor overrides)", "use --backend llamacpp-bench, or llamacpp-server "
                           "with --server-args '--n-cpu-moe N'")
        self.lc: ModuleType | None = None  # llama_cpp, once loaded
        self.model = None
        self._info: dict = {}
        self.prompts = PromptStream(config.seed)

    def load(self, model: ModelInfo) -> EngineInfo:
        lib_dir, build = bindings_lib_dir()
        self.lc = lc = _import_llama_cpp()
        _quiet_logs(lc)
        lc.llama_backend_init()
        params = lc.llama_model_default_params()
        params.n_gpu_layers = self.settings.n_gpu_layers
        params.use_extra_bufts = self.settings.repack
        _placement_lines.clear()
        self.model = lc.llama_model_load_from_file(model.path.encode(), params)
        if not self.model:
            raise ModelError(f"llama.cpp could not load {model.path}: {_last_log()}")
        n_vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(self.model))
        self.prompts = PromptStream(self.config.seed, min(model.n_vocab or n_vocab, n_vocab))
        bindings = installed_version("llama_cpp_python") or lc.__version__
        system_info = lc.llama_print_system_info().decode(errors="replace").strip()
        return EngineInfo(
            engine=self.engine,
            version=llama_cpp_version(build.build_number) if build else None,
            commit=build.commit if build else None,
            settings=self.settings.to_dict() | {"mode": "python"},
            details={
                "bindings": f"llama-cpp-python {bindings}",
                "library": str(lib_dir) if lib_dir else "bundled with llama-cpp-python",
                "system_info": system_info,
                **where.from_log(_placement_lines, system_info),
            },
        )

    def _bindings(self) -> ModuleType:
        if self.lc is None:
            raise PdxError(f"{self.name}: load() must come before run()")
        return self.lc

    def close(self) -> None:
        if self.model:
            self._bindings().llama_model_free(self.model)
            self.model = None

    # -- one test ----------------------------------------------------------

    def _context(self, test: TestSpec):
        lc, s = self._bindings(), self.settings
        params = lc.llama_context_default_params()
        params.n_ctx = test.context * test.batch
        params.n_batch = max(s.n_batch, test.batch)
        params.n_ubatch = min(s.n_ubatch, params.n_batch)
        params.n_seq_max = test.batch
        params.kv_unified = True
        params.n_threads = params.n_threads_batch = s.threads
        params.flash_attn_type = _FLASH[s.flash_attn]
        params.type_k, params.type_v = _GGML_TYPES[s.type_k], _GGML_TYPES[s.type_v]
        params.no_perf = False  # else the perf counters stay 0
        ctx = lc.llama_init_from_model(self.model, params)
        if not ctx:
            raise PdxError(f"llama.cpp could not create a context of {params.n_ctx} tokens: {_last_log()}")
        return ctx, params.n_batch

    def _decode(self, ctx, batch, items: list[tuple[int, int, int, bool]]) -> None:
        lc = self._bindings()
        batch.n_tokens = len(items)
        for i, (token, pos, seq, logits) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, logits
        code = lc.llama_decode(ctx, batch)
        if code != 0:
            raise PdxError(f"llama_decode failed with code {code}: {_last_log()}")

    def _prefill(self, ctx, batch, n_batch: int, items: list[Item]) -> None:
        """Decode ``items`` in chunks of ``n_batch`` and wait for the last."""
        for first in range(0, len(items), n_batch):
            self._decode(ctx, batch, items[first:first + n_batch])
        self._bindings().llama_synchronize(ctx)

    def _once(self, ctx, batch, n_batch: int, test: TestSpec) -> Sample:
        lc = self._bindings()
        plan = feed(test, self.prompts.next(test))
        lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
        if plan.depth:
            self._prefill(ctx, batch, n_batch, plan.depth)
        lc.llama_perf_context_reset(ctx)
        t0 = time.perf_counter_ns()
        if plan.prompt:
            self._prefill(ctx, batch, n_batch, plan.prompt)
        t1 = time.perf_counter_ns()
        for items in plan.steps:
            self._decode(ctx, batch, items)
            lc.llama_synchronize(ctx)
        t2 = time.perf_counter_ns()
        perf = lc.llama_perf_context(ctx)
        return Sample.timed(test, t0, t1, t2, {"t_p_eval_ms": perf.t_p_eval_ms, "t_eval_ms": perf.t_eval_ms,
                                               "n_p_eval": perf.n_p_eval, "n_eval": perf.n_eval})

    def run(self, test: TestSpec, repetitions: int, warmup: int) -> Iterator[Sample]:
        if self.model is None:
            raise PdxError("llamacpp-python: load() must come before run()")
        lc = self._bindings()
        ctx, n_batch = self._context(test)
        batch = lc.llama_batch_init(max(n_batch, test.batch), 0, 1)
        self._info = {"mode": "python", "n_ctx": test.context * test.batch, "n_batch": n_batch}
        try:
            for i in range(warmup + repetitions):
                sample = self._once(ctx, batch, n_batch, test)
                if i >= warmup:
                    yield sample
        finally:
            lc.llama_batch_free(batch)
            lc.llama_free(ctx)

    def test_info(self) -> dict:
        return self._info
