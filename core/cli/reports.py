"""``pdx report``, ``pdx publish`` and ``pdx compare``: comparisons from the registry."""

from __future__ import annotations

from pathlib import Path

import click

from pdx.cli.base import registry_option

where_option = click.option(
    "--where", "where", multiple=True, metavar="KEY=VALUE[,...]",
    help="Only runs matching every pair; keys: backend, model, hardware, tag, status, origin (repeatable).")
templates_option = click.option(
    "--templates", type=click.Path(file_okay=False), envvar="PDX_TEMPLATES",
    help="A folder of Jinja templates that override pdx's own [env PDX_TEMPLATES].")


@click.command()
@click.argument("runs", nargs=-1, metavar="[RUN]...")
@where_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="report.html", show_default=True,
              help="The HTML file to write.")
@click.option("--title", default="pdx report", show_default=True)
@templates_option
@registry_option
def report(runs, where, output, title, templates, registry) -> None:
    """Write one self-contained HTML file comparing runs (RUN ids or prefixes, and/or --where)."""
    from pdx import api
    from pdx.registry.where import parse_where
    from pdx.reports import selection
    from pdx.reports.report import write_report

    filters = parse_where(where)
    chosen = selection.select_runs(api.open_registry(registry), runs, filters)
    path = write_report(chosen, output, title=title, selection=selection.describe(runs, filters),
                        templates=templates)
    click.echo(f"wrote {path} ({len(chosen)} run{'s' if len(chosen) != 1 else ''})")


@click.command()
@click.argument("directory", type=click.Path())
@click.argument("runs", nargs=-1, metavar="[RUN]...")
@where_option
@click.option("--title", default="pdx results", show_default=True, help="The site's name, atop every page.")
@templates_option
@registry_option
def publish(directory, runs, where, title, templates, registry) -> None:
    """Build (or update) a static site of runs in DIRECTORY: leaderboard, run, model,
    hardware and comparison pages, each with the JSON it was made from."""
    from pdx import api
    from pdx.registry.where import parse_where
    from pdx.reports import selection
    from pdx.reports.site import publish as build_site

    chosen = selection.select_runs(api.open_registry(registry), runs, parse_where(where))
    result = build_site(chosen, directory, title=title, templates=templates)
    click.echo(f"published {len(chosen)} runs to {result.root}: {result.pages} pages, {len(result.changed)} files "
               f"changed, {len(result.removed)} removed, {result.charts['rendered']} charts rendered "
               f"({result.charts['reused']} reused), "
               f"{result.seconds:.1f} s")


@click.command()
@click.argument("baseline", metavar="A")
@click.argument("new", metavar="B")
@click.option("--html", "html", type=click.Path(dir_okay=False), help="Also write the comparison as one HTML file.")
@templates_option
@registry_option
def compare(baseline, new, html, templates, registry) -> None:
    """Compare run B against run A test by test: both rates, the change, and whether it is
    significant on the raw samples (asv's marks: - better, + worse, ~ not significant)."""
    from pdx import api
    from pdx.display import make_console
    from pdx.reports import comparison
    from pdx.reports.labels import run_label
    from pdx.reports.report import render_comparison
    from pdx.reports.writer import write_file

    store = api.open_registry(registry)
    base_run, new_run = store.get_run(baseline), store.get_run(new)
    lines = comparison.compare(base_run, new_run)
    console = make_console()
    console.print(f"baseline [bold]{run_label(base_run)}[/bold] · new [bold]{run_label(new_run)}[/bold]",
                  highlight=False)
    for what, a, b in comparison.differences(base_run, new_run):
        console.print(f"  {what}: {a} -> {b}", highlight=False)
    console.print(comparison.terminal_table(lines))
    if html:
        path = Path(html)
        write_file(path, render_comparison(base_run, new_run, lines, templates=templates))
        click.echo(f"wrote {path}")


def register(cli: click.Group) -> None:
    cli.add_command(report)
    cli.add_command(publish)
    cli.add_command(compare)
