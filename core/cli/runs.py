"""``pdx runs`` and ``pdx show``: read the registry."""

from __future__ import annotations

import click

from pdx.cli.base import Integer, Label, echo_json, json_option, registry_option
from pdx.contract.record import RUN_STATUSES


@click.command()
@click.option("--backend", type=Label(), help="Only runs of this backend.")
@click.option("--model", type=Label(256), help="Only runs whose model name contains this (or whose id starts with it).")
@click.option("--tag", type=Label(), help="Only runs with this tag.")
@click.option("--status", type=click.Choice(RUN_STATUSES))
@click.option("--limit", type=Integer(min=1), default=50, show_default=True)
@registry_option
@json_option
def runs(backend, model, tag, status, limit, registry, as_json) -> None:
    """List stored runs, newest first."""
    from pdx import api
    from pdx.reports.display import make_console, runs_table
    from pdx.reports.results import read_runs

    found = read_runs(api.open_registry(registry), backend=backend, model=model, tag=tag, status=status, limit=limit)
    if as_json:
        echo_json(found)
    elif not found:
        click.echo("no runs match")
    else:
        console = make_console()
        runs_table(found, console.width).print(console)


@click.command()
@click.argument("run_id")
@registry_option
@json_option
def show(run_id, registry, as_json) -> None:
    """Show one run: its results table and manifest (RUN_ID may be a prefix)."""
    from pdx import api
    from pdx.reports.display.conditions import print_conditions
    from pdx.reports.display import make_console, print_manifest, print_run
    from pdx.reports.results import read_run

    store = api.open_registry(registry)
    run = read_run(store, run_id)
    if as_json:
        echo_json(run)
        return
    console = make_console()
    print_run(run, store.display_url, console)
    print_manifest(run, console)
    print_conditions(run, console)


def register(cli: click.Group) -> None:
    cli.add_command(runs)
    cli.add_command(show)
