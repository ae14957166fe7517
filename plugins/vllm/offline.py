"""``vllm``: vLLM in-process through ``vllm.LLM``, with pdx's pp/tg semantics.

The engine core runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``)
and pdx steps it itself (``LLMEngine.add_request`` / ``step``), stamping
every token as the step that produced it returns: pp N is add to first
token of a one-token request, tg N first to last token of N + 1, depth a
prefix decoded first and held by the prefix cache, batch B requests added
together. vLLM's own per-request timestamps (``RequestOutput.metrics``) and
prefix-cache counters are kept beside pdx's figures.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from typing import TYPE_CHECKING, Iterator, Mapping

from pdx.contract.backend import Availability, Backend, BackendConfig, EngineInfo, Sample
from pdx.contract.errors import ModelError, PdxError
from pdx.domain.models import ModelInfo
from pdx.plugins.vllm import speculation
from pdx.plugins.vllm.locate import availability, engine_env, vllm_version
from pdx.domain.prompt_stream import PromptStream
from pdx.measure.serving.load import Planned
from pdx.domain.serving.records import RequestRecord
from pdx.measure.serving.runs import check_records, depth_request, matrix_requests, sample_from_records
from pdx.domain.workload import TestSpec

if TYPE_CHECKING:
    from vllm import LLM

_ENGINE_TIMES = ("queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts", "first_token_latency")
# pdx name -> the engine's counter (LLM.get_metrics), read before and after each sample
_COUNTERS = {"prefix_cache_queries": "vllm:prefix_cache_queries", "prefix_cache_hits": "vllm:prefix_cache_hits",
             "spec_decode_draft_tokens": "vllm:spec_decode_num_draft_tokens",
             "spec_decode_accepted_tokens": "vllm:spec_decode_num_accepted_tokens"}


def _reason(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:300]


def engine_prompt(request: Planned) -> dict:
    """What ``LLMEngine.add_request`` is given for a request: its token ids, as the prompt stream made them."""
    return {"prompt_token_ids": list(request.prompt)}


class VllmOffline(Backend):
    name = "vllm"
    engine = "vLLM"
    summary = "in-process through vllm.LLM: pp/tg at depth and batch"
    model_formats = ("hf",)
    default_dtype = "float16"  # bfloat16 crashes the CPU build's worker on this project's machines
    options = {"engine_args": 'vllm.LLM keyword arguments as JSON, e.g. {"enforce_eager": true, "max_model_len": 4096}'}

    @classmethod
    def availability(cls, options: Mapping[str, str] | None = None) -> Availability:
        return availability()

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        try:
            self.engine_args = json.loads(config.options.get("engine_args") or "{}")
        except ValueError as exc:
            raise PdxError(f"-o engine_args: not JSON ({exc})", 'give e.g. {"enforce_eager": true}') from None
        if not isinstance(self.engine_args, dict):
            raise PdxError("-o engine_args: give a JSON object of vllm.LLM keyword arguments")
        self.llm: LLM | None = None
        self._env_set: dict[str, str] = {}
        self.speculating = False  # load() was given a speculative_config
        self.prompts = PromptStream(config.seed)
        self._ids = itertools.count()

    def load(self, model: ModelInfo) -> EngineInfo:
        # vLLM reads its settings from the environment. In-process engine core: each step() is one
        # scheduler step, timed here; and its log off stdout, which is pdx's table or JSON.
        defaults = engine_env() | {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_LOGGING_STREAM": "ext://sys.stderr",
                                   "VLLM_LOGGING_LEVEL": "WARNING"}
        self._env_set = {k: v for k, v in defaults.items() if k not in os.environ}
        os.environ.update(self._env_set)
        from vllm import LLM

        spec = speculation.offline_config(self.engine_args)
        kwargs = {"enable_prefix_caching": True, "seed": self.config.seed} | self.engine_args
        kwargs |= {"model": model.path, "disable_log_stats": False}
        try:
            self.llm = LLM(**kwargs)
        except Exception as exc:  # vLLM fails in many ways (config, memory, kernels): one line, the cause
            raise ModelError(f"vLLM could not load {model.path}: {_reason(exc)}") from None
        self.prompts = PromptStream(self.config.seed, model.n_vocab or None)
        settings = {k: v for k, v in kwargs.items() if k != "model"} | {"mode": "offline"}
        env = {k: os.environ[k] for k in ("VLLM_CPU_KVCACHE_SPACE",
                                          "VLLM_ENABLE_V1_MULTIPROCESSING") if k in os.environ}
        self.speculating = spec is not None
        if spec:
            settings["speculation"] = speculation.recorded(spec)
        return EngineInfo(engine=self.engine, version=vllm_version(), settings=settings | {"env": env},
                          details=_device())

    def _counters(self) -> dict[str, float]:
        """The engine's counters of :data:`_COUNTERS` that it has, by pdx's names."""
        if self.llm is None:
            return {}
        try:
            metrics = self.llm.get_metrics()
        except Exception:
            return {}
        found = {m.name: getattr(m, "value", None) for m in metrics}
        return {label: value for label, name in _COUNTERS.items()
                if isinstance(value := found.get(name), (int, float))}

    def generate(self, planned: list[Planned]) -> list[RequestRecord]:
        """Add the requests together, step the engine, and record every token's arrival."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        if self.llm is None:
            raise PdxError(f"{self.name}: load() must come before run()")
        engine = self.llm.llm_engine
        records: dict[str, RequestRecord] = {}
        origin = time.perf_counter_ns()
        for i, request in enumerate(planned):
            params = SamplingParams(max_tokens=request.max_tokens, ignore_eos=True, temperature=0.0,
                                    output_kind=RequestOutputKind.DELTA)
            record = RequestRecord(idx=i, n_prompt=len(request.prompt), max_tokens=request.max_tokens,
                                   role=request.role)
            request_id = f"pdx-{next(self._ids)}"
            record.send_ns = time.perf_counter_ns() - origin
            engine.add_request(request_id, engine_prompt(request), params)
            records[request_id] = record
        try:
            while engine.has_unfinished_requests():
                outputs = engine.step()
                now = time.perf_counter_ns() - origin
                for output in outputs:
                    found = records.get(output.request_id)
                    if found is None:
                        continue
                    record = found
                    completion = output.outputs[0]
                    if completion.token_ids:
                        if record.first_ns is None:
                            record.first_ns = now - record.send_ns
                        record.events.append((now - record.send_ns, len(completion.token_ids)))
                    if output.finished:
                        record.end_ns = now - record.send_ns
                        record.finish_reason = completion.finish_reason
                        metrics = getattr(output, "metrics", None)
                        record.engine = {k: getattr(metrics, k) for k in _ENGINE_TIMES if hasattr(metrics, k)}
        except BaseException:
            # Ctrl-C or a failure mid-step: these requests must not run on inside the next sample.
            engine.abort_request(list(records))
            raise
        for record in records.values():
            if record.n_gen != record.max_tokens:
                record.fail(f"vLLM returned {record.n_gen} of {record.max_tokens} tokens")
        return list(records.values())

    def run(self, test: TestSpec, repetitions: int, warmup: int) -> Iterator[Sample]:
        if self.llm is None:
            raise PdxError("vllm: load() must come before run()")
        for i in range(warmup + repetitions):
            prompts = self.prompts.next(test)
            try:
                if (fill := depth_request(prompts)) is not None:  # decoded untimed, kept by the prefix cache
                    check_records(self.generate([fill]), test.name)
                before = self._counters()
                records = self.generate(matrix_requests(test, prompts))
                after = self._counters()
            except PdxError:  # a failed request: its own message, its records stored
                raise
            except Exception as exc:
                raise PdxError(f"{test.name}: vLLM failed: {_reason(exc)}") from None
            check_records(records, test.name)
            sample = sample_from_records(test, records)
            sample.engine = {label: after[label] - before[label] for label in after if label in before}
            generated = {"generation_tokens": sum(r.n_gen for r in records)}  # the first token's too, as vLLM counts
            drafted = speculation.counts(sample.engine | generated, self.speculating)
            if drafted:
                sample.engine["speculation"] = drafted
            if i >= warmup:
                yield sample

    def close(self) -> None:
        if self.llm is not None:
            engine_core = getattr(self.llm.llm_engine, "engine_core", None)
            if engine_core is not None and hasattr(engine_core, "shutdown"):
                engine_core.shutdown()
            self.llm = None
        # What load() set is this engine's, not the process's: a vllm serve started later in the same
        # process (a test session, a plugin) must not inherit an in-process engine core or a muted log.
        for key, value in self._env_set.items():
            if os.environ.get(key) == value:
                del os.environ[key]
        self._env_set = {}


def _device() -> dict:
    """Where vLLM computes, for the ceilings: a CUDA GPU (probed through torch), else the CPU."""
    import torch  # vLLM's own dependency, loaded by now

    return {"device": "gpu", "probe_device": "cuda:0"} if torch.cuda.is_available() else {"device": "cpu"}
