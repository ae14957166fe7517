"""``pdx report``, ``pdx publish`` and ``pdx compare``: comparisons from the registry."""

from __future__ import annotations

from pathlib import Path

import click

from pdx.cli.base import Number, echo_json, json_option, registry_option, where_option
from pdx.base.secrets import redact_secrets
from pdx.reports.sample_compare import DEFAULT_ALPHA, DEFAULT_FACTOR

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
    from pdx.reports.report.single_file import write_report

    filters = parse_where(where)
    chosen = selection.select_runs(api.open_registry(registry), runs, filters)
    path = write_report(chosen, output, title=title, selection=selection.describe(runs, filters),
                        templates=templates)
    click.echo(f"wrote {path} ({len(chosen)} run{'s' if len(chosen) != 1 else ''})")


@click.command()
@click.argument("directory", type=click.Path())
@click.argument("runs", nargs=-1, metavar="[RUN]...")
@where_option
@click.option("--title", help="The site's name, atop every page. [default: the name the site in DIRECTORY has "
                             "(publishing again keeps it), else \"pdx results\"]")
@click.option("--bundles", type=click.Path(exists=True, file_okay=False), metavar="FOLDER",
              help="Build from the bundle files of a results folder (docs/hub.md), not from a registry.")
@click.option("--cache", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --bundles: keep what each file gave this build in FILE, so the next reads only new and "
                   "changed files [default: one per site folder in pdx's cache directory].")
@click.option("--no-cache", is_flag=True, help="With --bundles: read every file, and keep nothing for the next build.")
@click.option("--skip-rejected", is_flag=True,
              help="With --bundles: leave out (and list) the files `pdx hub verify` rejects, where by default "
                   "any one refuses the build.")
@templates_option
@registry_option
def publish(directory, runs, where, title, bundles, cache, no_cache, skip_rejected, templates, registry) -> None:
    """Build (or update) a static site of runs in DIRECTORY: leaderboard, run, model,
    hardware and comparison pages, each with the JSON it was made from."""
    from pdx import api
    from pdx.reports.display.text import printable
    from pdx.registry.where import parse_where
    from pdx.reports import selection
    from pdx.reports.site.builder import publish as build_site

    if bundles:
        from pdx.api.contrib.publish import publish_bundles

        if runs or where:
            raise click.UsageError("--bundles publishes the whole folder: give no RUN or --where")
        if cache and no_cache:
            raise click.UsageError("give --cache FILE or --no-cache, not both")
        result = publish_bundles(bundles, directory, title=title, templates=templates,
                                 cache=False if no_cache else cache or True, skip_rejected=skip_rejected)
        for problem in result.rejected:
            click.echo(f"pdx: left out: {printable(problem)}", err=True)
    else:
        if cache or no_cache or skip_rejected:
            raise click.UsageError("--cache, --no-cache and --skip-rejected are for --bundles (a registry's site "
                                   "reads the registry)")

        chosen = selection.select_runs(api.open_registry(registry), runs, parse_where(where))
        # A site is public: no secret from a run stored before pdx redacted at import (a bundle's are at read).
        chosen = [redact_secrets(run) for run in chosen]
        result = build_site(chosen, directory, title=title, templates=templates)
    charts = result.charts
    read = "" if result.files_read is None else f"{result.files_read} bundle files read, "
    click.echo(f"published {result.runs} runs to {result.root}: {result.pages} pages, {len(result.changed)} files "
               f"changed, {len(result.removed)} removed, {read}{charts['rendered']} charts rendered "
               f"({charts['reused']} reused), {result.seconds:.1f} s")


@click.command()
@click.argument("baseline", metavar="A")
@click.argument("new", metavar="B")
@click.option("--factor", type=Number(min=1.0), default=DEFAULT_FACTOR, show_default=True,
              help="A change counts only beyond this factor (and when significant).")
@click.option("--html", "html", type=click.Path(dir_okay=False), help="Also write the comparison as one HTML file.")
@templates_option
@registry_option
@json_option
def compare(baseline, new, factor, html, templates, registry, as_json) -> None:
    """Compare run B against run A test by test on their raw samples (Mann-Whitney U):
    asv's marks, + slower, - faster, ~ changed but not significantly.

    Two runs without a test both measured have nothing to compare: one line
    says why and the exit code is 3, as `pdx check`'s."""
    from pdx import api
    from pdx.reports.display import print_check
    from pdx.reports import comparison
    from pdx.reports.gate import verdict
    from pdx.reports.report.single_file import render_comparison
    from pdx.reports.site.writer import write_file

    from pdx.reports.results import read_run

    store = api.open_registry(registry)
    base_run, new_run = read_run(store, baseline), read_run(store, new)
    result = verdict(base_run, new_run, factor, DEFAULT_ALPHA)  # nothing compared: no verdict, exit 3 as `pdx check`
    if as_json:
        echo_json(result.to_dict())
    else:
        for what, a, b in comparison.differences(base_run, new_run):
            click.echo(f"{what}: {a} -> {b}")
        print_check(result)
    if html:
        write_file(Path(html), render_comparison(base_run, new_run, comparison.compare(base_run, new_run,
                                                                                       comparisons=result.comparisons),
                                                 templates=templates))
        click.echo(f"wrote {html}", err=as_json)


def register(cli: click.Group) -> None:
    cli.add_command(report)
    cli.add_command(publish)
    cli.add_command(compare)
