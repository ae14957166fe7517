"""``pdx report`` and ``pdx publish``: HTML from the registry."""

from __future__ import annotations

import click

from pdx.cli.base import registry_option

where_option = click.option(
    "--where", "where", multiple=True, metavar="KEY=VALUE[,...]",
    help="Only runs matching every pair; keys: backend, model, hardware, tag, status (repeatable).")
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
    from pdx.reports import selection
    from pdx.reports.report import write_report

    filters = selection.parse_where(where)
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
    from pdx.reports import selection
    from pdx.reports.site import publish as build_site

    chosen = selection.select_runs(api.open_registry(registry), runs, selection.parse_where(where))
    result = build_site(chosen, directory, title=title, templates=templates)
    click.echo(f"published {len(chosen)} runs to {result.root}: {result.pages} pages, {result.changed} files "
               f"changed, {len(result.removed)} removed, {result.charts['rendered']} charts rendered "
               f"({result.charts['reused']} reused), "
               f"{result.seconds:.1f} s")


def register(cli: click.Group) -> None:
    cli.add_command(report)
    cli.add_command(publish)
