"""pdx-example: a pdx plugin that adds the ``example-llama-server`` backend, the
``pdx example-server`` command, the ``--example-server`` bench option, a
footer for pdx's reports, a chart of every decode sample, a site page of runs
by backend, an importer of llama-server's timings, a quantiser for a
llama.cpp fork's GGUF types, a wall-plug energy meter and llama-server builds
by version for ``pdx bench --engine-version``.

Every hook imports what it registers inside itself: this module is imported by
every ``pdx`` command, so it must stay cheap.
"""

from pathlib import Path

import click

from pdx import hookimpl


@hookimpl
def pdx_register_backends(register):
    from pdx_example.backend import ExampleLlamaServer

    register(ExampleLlamaServer)


@hookimpl
def pdx_register_commands(cli):
    from pdx_example.commands import example

    cli.add_command(example)


@hookimpl
def pdx_bench_options():
    return [click.Option(["--example-server", "server"], metavar="PATH", default=None,
                         help="llama-server binary for example-llama-server (-o server=PATH).")]


@hookimpl
def pdx_report_templates():
    return [str(Path(__file__).parent / "templates")]


@hookimpl
def pdx_register_charts(register):
    from pdx_example.charts import decode_samples

    register(decode_samples)


@hookimpl
def pdx_register_pages(register):
    from pdx.contract.page import SitePage
    from pdx_example.pages import backends_page

    register(SitePage("backends", "backends", backends_page))


@hookimpl
def pdx_register_importers(register):
    from pdx_example.timings import IMPORTER

    register(IMPORTER)


@hookimpl
def pdx_register_quantizers(register):
    from pdx.domain.synth.quantizers import Quantizer
    from pdx_example.quantize import TYPES, quantize

    register(Quantizer("ik-llama-quantize", TYPES, quantize))


@hookimpl
def pdx_register_meters(register):
    from pdx.contract.meter import MeterSource
    from pdx_example.meter import find_plug

    register(MeterSource("wall-plug", find_plug))


@hookimpl
def pdx_register_engine_builders(register):
    from pdx.contract.engine_build import EngineBuilder
    from pdx_example.versions import release

    register(EngineBuilder("example", "example-llama-server", release=release,
                           releases="llama-server builds in PDX_EXAMPLE_SERVERS/VERSION"))
