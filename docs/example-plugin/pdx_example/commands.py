"""``pdx example-server``: which llama-server the example backend would start."""

import click

from pdx.contract.errors import PdxError


@click.command("example-server")
@click.option("--server", metavar="PATH", help="A llama-server binary to check instead of the default.")
def example(server):
    """Show the llama-server binary example-llama-server starts, and its build."""
    from pdx_example.backend import INSTALL, find_server, server_version

    binary = find_server(server)
    if binary is None:
        raise PdxError("no llama-server found", INSTALL)
    version = server_version(binary)
    if version is None:
        raise PdxError(f"{binary} does not run (`--version` failed)", INSTALL)
    click.echo(f"{binary}: llama-server {version}")
