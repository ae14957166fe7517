"""``llamacpp-server``: llama.cpp's ``llama-server``, started by pdx or given by URL,
measured through the same streaming client as vLLM so their serving figures
sit side by side.

It speaks llama-server's own ``/completion`` (token ids per event; its
``/v1/completions`` streams text only). pdx starts it with ``--metrics`` so
its counters (``llamacpp:*``) are scraped beside pdx's figures; cached prompt
tokens stand for prefix-cache hits.
"""

from __future__ import annotations

from pathlib import Path

from pdx.contract.backend import Availability, EngineInfo
from pdx.contract.errors import PdxError
from pdx.domain.models import ModelInfo
from pdx.plugins.llamacpp.build import version_label
from pdx.plugins.llamacpp import speculation, where
from pdx.plugins.llamacpp.locate import SERVER_HINT, find_llama_server
from pdx.measure.serving.backend import SERVER_OPTIONS, ServerBackend
from pdx.measure.serving.managed import HOST
from pdx.measure.serving.openai import LlamaServerCompletion


class LlamaServer(ServerBackend):
    name = "llamacpp-server"
    engine = "llama.cpp"
    summary = "its llama-server (started by pdx or --url): pp/tg and serving scenarios"
    model_formats = ("gguf",)
    server_name = "llama-server"
    dialect = LlamaServerCompletion()
    options = SERVER_OPTIONS | speculation.OPTIONS
    binary: Path | None = None  # the llama-server pdx started (server_command)
    api_key_variable = "LLAMA_API_KEY"
    metric_counters = {
        "prompt_tokens": "llamacpp:prompt_tokens_total",
        "generation_tokens": "llamacpp:tokens_predicted_total",
        "prompt_seconds": "llamacpp:prompt_seconds_total",
        "generation_seconds": "llamacpp:tokens_predicted_seconds_total",
        "decode_calls": "llamacpp:n_decode_total",
        "prefix_cache_hits": "llamacpp:prompt_tokens_cached_total",
    }
    # llama-server has no KV-cache gauge since it dropped kv_cache_usage_ratio (read where an older one has it)
    metric_series = {
        "running": ("llamacpp:requests_processing",),
        "waiting": ("llamacpp:requests_deferred",),
        "kv_cache_usage": ("llamacpp:kv_cache_usage_ratio",),
        "prompt_tokens": ("llamacpp:prompt_tokens_total",),
        "generation_tokens": ("llamacpp:tokens_predicted_total",),
        "prefix_cache_hits": ("llamacpp:prompt_tokens_cached_total",),
        "decode_calls": ("llamacpp:n_decode_total",),
    }
    in_process = "llamacpp-python"

    def load(self, model: ModelInfo) -> EngineInfo:
        """The server's identity, and where it ran as its log says (a server given by --url: not said)."""
        info = super().load(model)
        log = Path(info.details["server_log"]) if info.details.get("server_log") else None
        if log is not None and log.is_file():
            info.details.update(where.from_log(log.read_text(errors="replace").splitlines()))
        return info

    def reported_prefill_s(self, figures: dict) -> float | None:
        return figures.get("prompt_seconds")

    @classmethod
    def server_availability(cls) -> Availability:
        try:
            binary = find_llama_server()
        except PdxError as exc:
            return Availability(False, exc.message, SERVER_HINT)
        if binary is None:
            return Availability(False, "no llama-server binary found (PATH, PDX_LLAMA_SERVER or a pdx build)",
                                SERVER_HINT)
        return Availability(True, version=version_label(binary))

    def server_command(self, model: ModelInfo, port: int) -> list[str]:
        binary = find_llama_server()
        if binary is None:
            raise PdxError("no llama-server binary found", SERVER_HINT)
        self.binary = binary
        return [str(binary), "-m", model.path, "--host", HOST, "--port", str(port), "--metrics",
                "-t", str(self.engine_threads()), *speculation.flags(self.config.options)]

    speculating = False  # the started server's command speculates (speculation)

    def speculation(self, command: list[str]) -> dict | None:
        found = speculation.read(command)
        self.speculating = found is not None
        if found and found.get("draft_model"):
            found["draft_model"] = self.draft_identity(found["draft_model"])
        return found

    def request_speculation(self, requests: list) -> dict | None:
        if not self.speculating:
            return None
        return speculation.counts([r.engine["timings"] for r in requests if r.ok and r.role != "warmup"
                                   and isinstance(r.engine.get("timings"), dict)])

    def engine_threads(self) -> int:
        return self.config.threads or 1

    def server_version(self) -> str | None:
        return version_label(self.binary) if self.binary else None
