"""``pdx plugins``: every plugin of the ``pdx`` entry-point group, what it provides, and what went wrong."""

from __future__ import annotations

import click

from pdx.base import plugin_manager
from pdx.cli.base import echo_json, json_option

STATUS_COLOURS = {"loaded": "green", "failed": "red", "disabled": "yellow"}


@click.command()
@json_option
def plugins(as_json) -> None:
    """List installed plugins: distribution and version, hooks, backends, problems.

    PDX_LOAD_PLUGINS=a,b loads only the plugins named (entry-point names);
    PDX_DISABLE_PLUGINS=a,b leaves those out. A plugin that fails to load is
    listed with the reason and the others work as usual.
    """
    plugin_manager.backends()  # the registrations are part of what a plugin is
    records = plugin_manager.plugin_state().records
    if as_json:
        echo_json([r.to_dict() for r in records])
        return
    for r in records:
        source = f"{r.distribution or '?'} {r.version or ''}".strip()
        status = click.style(f"{r.status:8}", fg=STATUS_COLOURS.get(r.status))
        click.echo(f"{r.name:14} {status}  {source}  ({r.value})")
        if r.hooks:
            click.echo(f"{'':14} hooks: {', '.join(r.hooks)}")
        if r.backends:
            click.echo(f"{'':14} backends: {', '.join(r.backends)}")
        if r.error:
            click.echo(f"{'':14} error: {r.error}")
        if r.disabled_by:
            click.echo(f"{'':14} disabled by {r.disabled_by}")
        for warning in r.warnings:
            click.echo(click.style(f"{'':14} warning: {warning}", fg="yellow"))


def register(cli: click.Group) -> None:
    cli.add_command(plugins)
