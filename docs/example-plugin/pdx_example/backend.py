"""``example-llama-server``: llama.cpp's llama-server, measured over pdx's generic
OpenAI-compatible backend, with the two things a dedicated plugin adds to it:

- a lifecycle: ``server_command`` makes pdx start the server with the user's
  model (and ``--server-args``), wait for ``/health``, keep its log with the
  run, and stop it when the run ends (``--url`` still measures a running one);
- metrics: the names of the server's Prometheus counters, which pdx scrapes
  from ``/metrics`` before and after every sample and stores beside its own
  figures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from pdx.contract.backend import Availability
from pdx.contract.errors import PdxError
from pdx.measure.serving.backend import SERVER_OPTIONS
from pdx.measure.serving.generic import OpenAIBackend
from pdx.measure.serving.managed import HOST

INSTALL = "put llama-server on PATH, set PDX_EXAMPLE_SERVER, or pass --example-server PATH"


def find_server(given: str | None = None) -> str | None:
    """``-o server=PATH``, then ``PDX_EXAMPLE_SERVER``, then ``llama-server`` on PATH."""
    return given or os.environ.get("PDX_EXAMPLE_SERVER") or shutil.which("llama-server")


def server_version(binary: str) -> str | None:
    """llama-server's build, from ``--version`` (``version: 0.5.0-dev (build 1, commit 0c1e570)``);
    None if it does not run."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    found = re.search(r"^version: (.+)$", done.stdout + done.stderr, re.MULTILINE)
    return found[1].strip() if found else None


class ExampleLlamaServer(OpenAIBackend):
    name = "example-llama-server"
    engine = "llama.cpp"
    summary = "the plugin guide's example: llama-server started by pdx, over the openai backend"
    model_formats = ("gguf",)
    options = SERVER_OPTIONS | {"server": "llama-server binary (default: PDX_EXAMPLE_SERVER, then PATH)"}
    server_name = "llama-server"
    metric_counters = {
        "prompt_tokens": "llamacpp:prompt_tokens_total",
        "generation_tokens": "llamacpp:tokens_predicted_total",
        "prefix_cache_hits": "llamacpp:prompt_tokens_cached_total",
    }

    @classmethod
    def availability(cls, options=None):
        options = options or {}
        if options.get("url"):
            return super().availability(options)
        binary = find_server(options.get("server"))
        if binary is None:
            return Availability(False, "no llama-server found", INSTALL)
        version = server_version(binary)
        if version is None:
            return Availability(False, f"{binary} does not run (`--version` failed)", INSTALL)
        return Availability(True, version=version)

    def binary(self) -> str:
        binary = find_server(self.config.options.get("server"))
        if binary is None:
            raise PdxError("no llama-server found", INSTALL)
        return binary

    def server_command(self, model, port):
        return [self.binary(), "-m", model.path, "--host", HOST, "--port", str(port), "--metrics",
                "-t", str(self.config.threads or 1)]

    def server_version(self):
        return server_version(self.binary())
