"""``openai``: any OpenAI-compatible server by ``--url``, no plugin of its own needed.

The backend itself is core (:class:`pdx.measure.serving.generic.OpenAIBackend`), so
a dedicated plugin can build on it; this module only registers it, through
the same entry-point group as every other plugin.
"""

from __future__ import annotations

from pdx.contract.hookspecs import hookimpl


@hookimpl
def pdx_register_backends(register) -> None:
    from pdx.measure.serving.generic import OpenAIBackend

    register(OpenAIBackend)
