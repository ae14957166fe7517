"""``pdx bisect``: build an engine's commits and name the first that made a benchmark slower."""

from __future__ import annotations

import click

from pdx.base import plugin_manager
from pdx.cli.base import Number, echo_json, json_option, registry_option
from pdx.cli.bench import bench, bench_plan
from pdx.reports.sample_compare import DEFAULT_ALPHA, DEFAULT_FACTOR, DEFAULT_RETRIES


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--engine", required=True, metavar="NAME", help="Engine whose source to build (llamacpp).")
@click.option("--source", required=True, type=click.Path(exists=True, file_okay=False),
              help="A git checkout of the engine (never changed: each commit is built from a shared clone).")
@click.option("--good", required=True, metavar="COMMIT", help="A commit that is fast (hash, tag or branch).")
@click.option("--bad", required=True, metavar="COMMIT", help="A later commit that is slow.")
@click.option("--build-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Where the commits' builds are kept, one folder per commit and flags. "
                   "[default: <pdx cache>/engines/commits]")
@click.option("--factor", default=DEFAULT_FACTOR, show_default=True, type=Number(min=1),
              help="A commit is bad when a test is this much slower than the good commit's, and significantly.")
@click.option("--alpha", default=DEFAULT_ALPHA, show_default=True, type=Number(0, 1, min_open=True, max_open=True),
              help="Significance level of each commit's test (Mann-Whitney U on every repetition).")
@click.option("--retries", default=DEFAULT_RETRIES, show_default=True, type=click.IntRange(0, 10),
              help="An undecided commit is benched again, with the good commit, this many times at most, and "
                   "judged on every repetition so far.")
@registry_option
@json_option
@click.argument("bench_args", nargs=-1, type=click.UNPROCESSED, metavar="-- [BENCH OPTIONS]")
@click.pass_context
def bisect(ctx: click.Context, engine, source, good, bad, build_dir, factor, alpha, retries, registry, as_json,
           bench_args) -> None:
    """Find the first commit between --good and --bad that made a benchmark slower.

    Each commit tried is built (once: cached by commit and build flags), benched with
    the options after -- (those of `pdx bench`: -m MODEL -p 512 -n 128 -r 5 ...) and
    stored, so `pdx history` shows them; it is bad when a test is significantly slower
    than the good commit's (as `pdx check` judges). Builds at most ceil(log2(n)) + 1
    for n commits from good to bad. Exit status: 0 found, 1 the range is wrong (the
    bad commit is no slower), 125 a commit could not be tested (build or run failed,
    or its samples were still undecided after --retries benches more: repeat more with -r).
    """
    from pdx import api
    from pdx.api.bisect import bisect as run_bisect

    builders = plugin_manager.engine_builders()
    builder = builders.get(engine)
    if builder is None or builder.commit is None:
        known = ", ".join(name for name, b in sorted(builders.items()) if b.commit) or "none"
        raise click.BadParameter(f"{engine!r} cannot be built from a commit; engines that can: {known}",
                                 param_hint="--engine")
    args = list(bench_args[1:] if bench_args[:1] == ("--",) else bench_args)
    sub = bench.make_context("pdx bisect --", args, parent=ctx)
    if sub.params.pop("engine_version"):
        raise click.UsageError("--engine-version has no place in a bisect: it builds the commits it tries")
    configs = bench_plan(sub, **sub.params)
    if len(configs) != 1:
        raise click.UsageError(f"the bench options make {len(configs)} runs per commit; give one backend, "
                               "one -t and one value of each run axis")
    (config,) = configs
    if config.backend not in (None, builder.backend, engine):
        raise click.BadParameter(f"--backend {config.backend}: a bisect benches {engine}'s builds with "
                                 f"{builder.backend}", param_hint="BENCH OPTIONS")
    result = run_bisect(api.open_registry(registry), builder, source, good, bad, config, build_dir, factor, alpha,
                        say=lambda line: click.echo(line, err=True), retries=retries)
    if as_json:
        echo_json(result.to_dict())
        return
    found = result.first_bad
    assert found is not None  # run_bisect returns only with the first bad commit found (else WrongRange)
    click.echo(f"first bad commit: {found.commit} {found.subject}")
    click.echo(f"{result.builds} builds for {result.commits} commits (at most {result.bound}); "
               f"every run is tagged bisect: see `pdx history`")


def register(cli: click.Group) -> None:
    cli.add_command(bisect)
