"""``vllm-server``: an OpenAI-compatible ``vllm serve``, started by pdx or given by URL."""

from __future__ import annotations

from pdx.contract.backend import Availability
from pdx.domain.models import ModelInfo
from pdx.plugins.vllm import speculation
from pdx.plugins.vllm.locate import availability, engine_env, vllm_command, vllm_version
from pdx.measure.serving.backend import SERVER_OPTIONS, ServerBackend
from pdx.measure.serving.managed import HOST


class VllmServer(ServerBackend):
    name = "vllm-server"
    engine = "vLLM"
    summary = "its OpenAI server (vllm serve, started by pdx or --url): pp/tg and serving scenarios"
    model_formats = ("hf",)
    default_dtype = "float16"  # bfloat16 crashes the CPU build's worker on this project's machines
    server_name = "vllm serve"
    extra_body = {"return_token_ids": True}
    api_key_variable = "VLLM_API_KEY"
    in_process = "vllm"
    options = SERVER_OPTIONS | speculation.OPTIONS
    speculating = False  # the started server's command speculates (speculation)
    metric_histograms = {
        "ttft": "vllm:time_to_first_token_seconds",
        "itl": "vllm:inter_token_latency_seconds",
        "tpot": "vllm:request_time_per_output_token_seconds",
        "e2el": "vllm:e2e_request_latency_seconds",
        "queue": "vllm:request_queue_time_seconds",
        "prefill": "vllm:request_prefill_time_seconds",
        "decode": "vllm:request_decode_time_seconds",
    }
    metric_counters = {
        "prompt_tokens": "vllm:prompt_tokens_total",
        "generation_tokens": "vllm:generation_tokens_total",
        "prefix_cache_queries": "vllm:prefix_cache_queries_total",
        "prefix_cache_hits": "vllm:prefix_cache_hits_total",
    } | speculation.COUNTERS
    metric_series = {
        "running": ("vllm:num_requests_running",),
        "waiting": ("vllm:num_requests_waiting",),
        "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),  # renamed in V1
        "requests_done": ("vllm:request_success_total",),
        "preemptions": ("vllm:num_preemptions_total",),
        "prompt_tokens": ("vllm:prompt_tokens_total",),
        "generation_tokens": ("vllm:generation_tokens_total",),
        "prefix_cache_hits": ("vllm:prefix_cache_hits_total",),
        "prefix_cache_queries": ("vllm:prefix_cache_queries_total",),
    }

    def reported_prefill_s(self, figures: dict) -> float | None:
        return (figures.get("prefill") or {}).get("sum_s")

    @classmethod
    def server_availability(cls) -> Availability:
        return availability()

    def server_command(self, model: ModelInfo, port: int) -> list[str]:
        return [*vllm_command(), "serve", model.path, "--host", HOST, "--port", str(port),
                *speculation.flags(self.config.options)]

    def speculation(self, command: list[str]) -> dict | None:
        found = speculation.read(command)
        self.speculating = found is not None
        return found

    def speculation_counts(self, figures: dict) -> dict | None:
        return speculation.counts(figures, self.speculating)

    def server_env(self) -> dict:
        return engine_env(super().server_env())

    def server_version(self) -> str | None:
        return vllm_version()
