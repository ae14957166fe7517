"""``pdx backends``: what can run here, and how to get what cannot."""

from __future__ import annotations

import click

from pdx.base import plugin_manager
from pdx.contract.backend import option_help
from pdx.cli.base import echo_json, json_option


@click.command()
@click.option("-v", "--verbose", is_flag=True, help="Also list each backend's engine options.")
@json_option
def backends(verbose, as_json) -> None:
    """List backends: available or not, why, and how to install."""
    rows = []
    for name, backend in sorted(plugin_manager.backends().items()):
        status = backend.availability()
        rows.append({
            "name": name,
            "engine": backend.engine,
            "available": status.available,
            "version": status.version,
            "reason": status.reason or None,
            "install": status.install or None,
            "summary": backend.summary,
            "model_formats": list(backend.model_formats),
            "options": {key: option_help(declared) for key, declared in backend.options.items()},
        })
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        mark = click.style("available", fg="green") if row["available"] else click.style("unavailable", fg="red")
        version = f" {row['version']}" if row["version"] else ""
        click.echo(f"{row['name']:18} {mark}  {row['engine']}{version}: {row['summary']}")
        if not row["available"]:
            click.echo(f"{'':18} why: {row['reason']}")
            if row["install"]:
                click.echo(f"{'':18} install: {row['install']}")
        for key, help_text in row["options"].items() if verbose else ():
            click.echo(f"{'':18} -o {key}=...  {help_text}")
    for record in plugin_manager.plugin_state().records:
        if record.status == "failed":
            click.echo(click.style(f"plugin {record.name} not loaded: {record.error}", fg="yellow"), err=True)
        for warning in record.warnings:
            click.echo(click.style(f"plugin {record.name}: {warning}", fg="yellow"), err=True)


def register(cli: click.Group) -> None:
    cli.add_command(backends)
