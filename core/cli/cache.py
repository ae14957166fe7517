"""``pdx cache``: what pdx keeps between calls that it can always compute again."""

from __future__ import annotations

import click

from pdx.cli.base import echo_json, json_option
from pdx.domain.models import cache as model_cache
from pdx.base.paths import cache_dir


@click.group()
def cache() -> None:
    """What pdx keeps between calls: model files' content hashes and identities."""


@cache.command()
@json_option
def clear(as_json) -> None:
    """Forget every model file's cached content hash and identity (metadata, vocabulary); the next
    read of each file computes them again. Synthetic models, engine builds and probes stay."""
    removed = model_cache.clear()
    if as_json:
        echo_json(removed)
        return
    click.echo(f"removed {removed[model_cache.HASHES]} content hash(es) and {removed[model_cache.IDENTITIES]} "
               f"model identit{'y' if removed[model_cache.IDENTITIES] == 1 else 'ies'} from {cache_dir()}")


def register(cli: click.Group) -> None:
    cli.add_command(cache)
