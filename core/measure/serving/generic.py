"""``openai``: any server that speaks OpenAI's ``/v1/completions``, measured by ``--url``.

SGLang, TGI, Ollama, LM Studio, llama-server or vLLM: pp/tg over HTTP and
the serving scenarios, through the same client and base as the built-in
server backends (:class:`~pdx.measure.serving.backend.ServerBackend`). What pdx
cannot know about an unknown server it asks for, or leaves out: the token
count per event (ids, logprobs or text, settled against ``usage``: see
:class:`~pdx.measure.serving.openai.TextCompletions`), no ``/metrics`` names; the
server's version comes from the first of a few well-known endpoints that
answers, as for every server backend given by URL.

A dedicated plugin builds on this class: it adds a lifecycle
(``server_command``, so pdx starts and stops the server), the server's
metric names (scraped before and after every sample), and its dialect
where it has a better one (docs/plugins.rst, "Building on the openai backend").
"""

from __future__ import annotations

from pdx.contract.backend import Availability
from pdx.measure.serving.backend import SERVER_OPTIONS, ServerBackend
from pdx.measure.serving.openai import TextCompletions

URL_OPTIONS = {k: SERVER_OPTIONS[k] for k in ("url", "request_timeout", "model_name")}


class OpenAIBackend(ServerBackend):
    name = "openai"
    engine = "OpenAI-compatible server"
    summary = "any OpenAI-compatible server by --url (SGLang, TGI, Ollama, llama-server, LM Studio, vLLM)"
    model_formats = ("gguf", "hf")  # what -m may name, to identify the served model
    options = URL_OPTIONS
    server_name = "the server"
    dialect = TextCompletions()

    @classmethod
    def server_availability(cls) -> Availability:
        return Availability(False, "it measures a running server, and no --url was given",
                            "pdx bench --backend openai --url http://HOST:PORT")
