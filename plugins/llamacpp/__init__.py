"""llama.cpp backends.

``llamacpp-bench`` drives a ``llama-bench`` binary; ``llamacpp-python`` runs
llama.cpp in-process through llama-cpp-python's low-level API; ``llamacpp``
picks the first of the two that is installed. All three keep llama-bench's
semantics, so their figures can be set side by side. ``llamacpp-server``
measures ``llama-server`` through pdx's serving client (as vLLM's server). ``pdx llamacpp
install`` builds llama.cpp once for both.
"""

from __future__ import annotations

import click

from pdx.contract.engine_build import EngineBuilder
from pdx.contract.hookspecs import hookimpl
from pdx.plugins.llamacpp.commands import llamacpp


@hookimpl
def pdx_register_backends(register) -> None:
    from pdx.plugins.llamacpp.auto import LlamaCpp
    from pdx.plugins.llamacpp.bench_driver import LlamaBench
    from pdx.plugins.llamacpp.inprocess import LlamaPython
    from pdx.plugins.llamacpp.server import LlamaServer

    register(LlamaCpp)
    register(LlamaBench)
    register(LlamaPython)
    register(LlamaServer)


@hookimpl
def pdx_register_commands(cli: click.Group) -> None:
    cli.add_command(llamacpp)


@hookimpl
def pdx_bench_options() -> list[click.Option]:
    return [
        click.Option(
            ["--llama-bench", "llama_bench"],
            metavar="PATH",
            default=None,
            help="llama-bench binary for the llama.cpp backends (same as -o llama_bench=PATH).",
        )
    ]


@hookimpl
def pdx_register_quantizers(register) -> None:
    from pdx.plugins.llamacpp.build import QUANT_TYPES, quantize
    from pdx.domain.synth.quantizers import Quantizer

    register(Quantizer("llama-quantize", QUANT_TYPES, quantize))


@hookimpl
def pdx_register_engine_builders(register) -> None:
    from pdx.plugins.llamacpp.commits import build_commit, build_release

    register(EngineBuilder("llamacpp", "llamacpp-bench", commit=build_commit, release=build_release,
                           releases="llama-cpp-python releases (`pdx llamacpp install --version`)"))
