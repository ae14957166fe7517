"""``pdx submit`` and ``pdx hub verify``: runs contributed to a shared results folder (docs/hub.md)."""

from __future__ import annotations

import sys

import click

from pdx.cli.base import registry_option, where_option
from pdx.contract.errors import WorkloadError
from pdx.domain.workload import parse_target_ci


def _fraction(ctx, param, value) -> float:
    """``5%`` or ``0.05`` as a fraction (click names the option in its error)."""
    try:
        number = parse_target_ci(str(value))
    except WorkloadError:
        raise click.BadParameter(f"{value!r} is not a percentage such as 5% or 0.05") from None
    if not 0 <= number < 10:
        raise click.BadParameter(f"{value!r} is out of range (0% to 1000%)")
    return number


@click.command()
@click.argument("runs", nargs=-1, metavar="[RUN]...")
@where_option
@click.option("-o", "--output", "folder", required=True, type=click.Path(file_okay=False),
              help="The results folder (a checkout of the results repository).")
@click.option("--max-cv", default="5%", show_default=True, callback=_fraction, metavar="PCT",
              help="Refuse a run with a test whose rate varied more than this (coefficient of variation).")
@click.option("--force", is_flag=True, help="Submit runs that would otherwise be refused.")
@registry_option
def submit(runs, where, folder, max_cv, force, registry) -> None:
    """Write runs (all, those named, or those matching --where) to FOLDER as redacted bundles,
    one per run, named by content id; refuses interrupted, failed or unidentified runs, and those
    no leaderboard takes: a test above its ceiling, unable to fit, noisy, or a serving test of an overloaded server."""
    from pdx import api
    from pdx.api.contrib.submit import submit as write
    from pdx.reports.display.text import printable
    from pdx.registry import transfer
    from pdx.registry.where import parse_where

    store = api.open_registry(registry)
    done = write(store, transfer.select(store, runs, parse_where(where)), folder, max_cv, force)
    written = [d for d in done if d.file]
    for entry in done:
        if entry.file:
            note = "already there" if entry.existed else "wrote"
            forced = f" (forced: {'; '.join(entry.refused)})" if entry.refused else ""
            click.echo(printable(f"{note} {entry.file} (run {entry.run_id[:12]}){forced}"))
            if entry.removed:  # privacy by default: the contributor sees what the bundle no longer holds
                click.echo(f"  redacted {entry.removed_text}")
        else:
            click.echo(printable(f"refused run {entry.run_id[:12]}: {'; '.join(entry.refused)} (--force submits it)"),
                       err=True)
    new = [d.file for d in written if d.file and not d.existed]
    if new:
        click.echo(f"\ncommit them:\n  git -C {folder} add {' '.join(new)}\n"
                   f"  git -C {folder} commit -m 'pdx: {len(new)} run(s)'\nthen open a pull request")
    if len(written) < len(done):
        sys.exit(1)


@click.group("hub")
def hub_group() -> None:
    """A shared results folder: check it (CI on pull requests); `pdx publish --bundles` builds its site."""


@hub_group.command("verify")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--tolerance", default="10%", show_default=True, callback=_fraction, metavar="PCT",
              help="How far above its stored ceiling a rate may be before it is implausible.")
def verify(folder, tolerance) -> None:
    """Check every bundle of FOLDER: schema, digests, names, duplicates, model identities and
    plausible rates. One line per problem, naming its file; exit 1 on any."""
    from pdx.api.contrib.verify import verify_folder
    from pdx.reports.display.text import printable

    result = verify_folder(folder, tolerance)
    for problem in result.problems:  # a file's name is a stranger's: an escape sequence in it is shown, not obeyed
        click.echo(printable(str(problem)))
    click.echo(f"{result.files} file(s), {result.runs} run(s): "
               f"{len(result.problems) or 'no'} problem(s)", err=bool(result.problems))
    if result.problems:
        sys.exit(1)


def register(cli: click.Group) -> None:
    cli.add_command(submit)
    cli.add_command(hub_group)
