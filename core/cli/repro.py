"""``pdx rerun`` and ``pdx check``: repeat a run, and gate on regressions."""

from __future__ import annotations

import click

from pdx.contract.backend import option_pairs
from pdx.cli.base import Number, echo_json, json_option, registry_option, tag_option
from pdx.cli.bench import run_and_show
from pdx.reports.sample_compare import DEFAULT_ALPHA, DEFAULT_FACTOR


@click.command()
@click.argument("run_id")
@click.option("--allow-drift", is_flag=True, help="Run even if the model file or engine changed; record what drifted.")
@click.option("-m", "--model", metavar="PATH", help="Where the run's model is now (its hash must still match).")
@click.option("-o", "--option", "options", multiple=True, metavar="KEY=VALUE",
              help="What a rerun never takes from a stored run, given again: a program's path (llama_bench), "
                   "server_args, url, engine_args, in_process_options; repeatable.")
@tag_option
@registry_option
@json_option
@click.pass_context
def rerun(ctx: click.Context, run_id, allow_drift, model, options, tags, registry, as_json) -> None:
    """Repeat a stored run with exactly its configuration, linked to it.

    A stored run is data: whoever wrote it (an imported bundle, a pull, a shared registry) could name
    anything in it. So a rerun runs no program, command line or code and reaches no server the record
    names: pdx finds the engine by its own settings (PDX_LLAMA_BENCH, PATH, its build), and a run that
    needs server flags, a URL or engine arguments is refused until they are given again with -o.
    """
    from pdx import api
    from pdx.api.rerun import rerun_config

    try:
        given = option_pairs(options)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="-o/--option") from None
    store = api.open_registry(registry)
    notes: list[str] = []
    config = rerun_config(store.get_run(run_id), allow_drift, model, list(tags), api.command_line(), given, notes)
    for note in notes:
        click.echo(f"pdx: {note}", err=True)
    run = run_and_show(config, store, as_json)
    if as_json:
        echo_json(run)
    if run["status"] != "complete":
        ctx.exit(1)


@click.command()
@click.argument("run_id", required=False)
@click.option("--baseline", metavar="RUN|TAG",
              help="Baseline run (id or prefix), or a tag: its newest run older than the run checked.")
@click.option("--history", "use_history", is_flag=True,
              help="Gate on the run's history instead (its machine, model and backend over engine versions): "
                   "fail when a test's newest step is a regression beyond the factor.")
@click.option("--factor", default=DEFAULT_FACTOR, show_default=True, type=Number(),
              help="Smallest slowdown that counts (1.05: 5%).")
@click.option("--alpha", default=DEFAULT_ALPHA, show_default=True, type=Number(0, 1, min_open=True, max_open=True),
              help="Significance level of the Mann-Whitney U test.")
@registry_option
@json_option
@click.pass_context
def check(ctx: click.Context, run_id, baseline, use_history, factor, alpha, registry, as_json) -> None:
    """Compare a run (default: the newest of the baseline's model and backend) to a baseline.

    A tag as the baseline is its newest run of the same model and backend made
    before the run checked. Marks (asv's): + slower, - faster, ~ changed but
    not significant, x cannot compare, ! failed.

    \b
    Exit codes:
      0  no significant regression
      1  a test is significantly slower by more than the factor, or failed
         where the baseline passed (--history: a test's newest step is a
         regression)
      2  a bad option, or no run or tag of that name
      3  nothing compared: no run to check, no tagged run older than it,
         or no test both runs measured (the one line says which)
    """
    from pdx import api
    from pdx.reports.display import print_check
    from pdx.reports.gate import EXIT_REGRESSION, check as run_check

    if use_history == bool(baseline):
        raise click.UsageError("give --baseline RUN|TAG, or --history (not both)")
    if use_history:
        from pdx.reports.display import make_console
        from pdx.reports.display.history import print_history
        from pdx.reports.history import history_of_run

        found = history_of_run(api.open_registry(registry), run_id, factor)
        if as_json:
            echo_json(found.to_dict() | {"passed": not found.regressions})
        else:
            print_history(found, make_console())
        if found.regressions:
            ctx.exit(EXIT_REGRESSION)
        return
    result = run_check(api.open_registry(registry), baseline, run_id, factor, alpha)
    if as_json:
        echo_json(result.to_dict())
    else:
        print_check(result)
    if result.regressions:
        ctx.exit(EXIT_REGRESSION)


@click.command()
@click.option("--hardware", metavar="NAME|ID", help="The machine (part of its name, or the start of its id).")
@click.option("--model", metavar="NAME|ID", help="The model (part of its name, or the start of its sha256).")
@click.option("--backend", metavar="NAME", help="The backend the runs used.")
@click.option("--test", "tests", multiple=True, metavar="NAME", help="Only this test (pp512, tg128 @ d4096...); "
              "repeatable.")
@click.option("--factor", default=DEFAULT_FACTOR, show_default=True, type=Number(min=1.0),
              help="Smallest step that counts (1.05: 5%).")
@registry_option
@json_option
def history(hardware, model, backend, tests, factor, registry, as_json) -> None:
    """An engine's history on one machine and model: each test's runs by engine version, a sparkline,
    the latest against the best, and the steps found (asv's penalised fit over the stored samples)."""
    from pdx import api
    from pdx.reports.display import make_console
    from pdx.reports.display.history import print_history
    from pdx.reports.history import history as engine_history

    found = engine_history(api.open_registry(registry), hardware, model, backend, list(tests), factor)
    if as_json:
        echo_json(found.to_dict())
    else:
        print_history(found, make_console())


def register(cli: click.Group) -> None:
    cli.add_command(history)
    cli.add_command(rerun)
    cli.add_command(check)
