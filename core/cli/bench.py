"""``pdx bench``: run a benchmark and store it."""

from __future__ import annotations

import weakref

import click

from pdx.contract.backend import option_pairs
from pdx.contract.errors import PdxError
from pdx.cli.base import (Integer, Number, echo_json, energy_options, engine_option, json_option, registry_option,
                          server_options, tag_option, warn_energy)
from pdx.contract.numbers import MAX_COUNT, MAX_THREADS, parse_int
from pdx.domain.workload import (AUTO_FIRST_BATCH, DEFAULT_MAX_REPETITIONS, DEFAULT_TARGET_CI, BenchOptions,
                                 parse_int_list,
                          parse_target_ci)

PLUGIN_OPTIONS_KEY = "plugin_options"


class Repetitions(click.ParamType):
    """A count of at least 1, or ``auto`` (adaptive: repeat until --target-ci is met)."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value == "auto":
            return value

        try:
            return parse_int(value, "-r", 1, MAX_COUNT)
        except PdxError:
            pass
        self.fail(f"{value!r} is not a count of at least 1 or 'auto'", param, ctx)


def adaptive_settings(repetitions, target_ci: str | None) -> tuple[int, float | None]:
    """(first batch, target CI or None) from -r and --target-ci."""
    target = parse_target_ci(target_ci) if target_ci else None
    if repetitions == "auto":
        return AUTO_FIRST_BATCH, target or DEFAULT_TARGET_CI
    return repetitions, target


def parse_options(values: tuple[str, ...], plugin_options: dict | None = None, **flags: str | None) -> dict[str, str]:
    """``-o KEY=VALUE`` pairs, plus flags that are options by another name (``--url``), then the
    plugins' bench options (given ones only; they win over -o)."""
    try:
        options = option_pairs(values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="-o/--option") from None
    given = {k: str(v) for k, v in (plugin_options or {}).items() if v is not None}
    return options | {k: v for k, v in flags.items() if v} | given


def server_variants(server_args: tuple[str, ...]) -> list[dict] | None:
    """One run per ``--server-args`` given."""
    return [{"server_args": args} for args in server_args] or None


def option_variants(server_args: tuple[str, ...], n_gpu_layers: str | None, n_cpu_moe: str | None) -> list[dict] | None:
    """One run per combination of ``--server-args``, ``-ngl`` and ``-ncmoe`` values (llama-bench's axes)."""
    axes = [server_variants(server_args) or [{}]]
    for key, flag, given in (("n_gpu_layers", "-ngl", n_gpu_layers), ("n_cpu_moe", "-ncmoe", n_cpu_moe)):
        if given:
            axes.append([{key: str(n)} for n in parse_int_list(given, flag, minimum=0)])
    combined: list[dict[str, str]] = [{}]
    for axis in axes:
        combined = [done | more for done in combined for more in axis]
    return combined if combined != [{}] else None


def execute(configs: list, registry: str | None, as_json: bool) -> list[dict]:
    """Run each planned benchmark, printing each run's table as it finishes."""
    from pdx import api

    store = api.open_registry(registry)
    return [run_and_show(config, store, as_json) for config in configs]


@click.command()
@click.option("--backend", "backends", metavar="NAME[,NAME]", help="Backend(s) to run; one run each. [default: the "
              "first available]")
@click.option("-m", "--model", metavar="PATH", help="Model file or directory. [default: a synthetic ~100M llama, made "
              "once]")
@click.option("-p", "--n-prompt", default="512", show_default=True, help="Prompt lengths of pp tests (0: none).")
@click.option("-n", "--n-gen", default="128", show_default=True, help="Generated lengths of tg tests (0: none).")
@click.option("-pg", "--prompt-gen", metavar="PP,TG", help="pp+tg tests: one PP,TG pair, or several joined by ';'.")
@click.option("-d", "--n-depth", default="0", show_default=True, help="Tokens already in the KV cache before each "
              "test.")
@click.option("-b", "--batch", default="1", show_default=True, help="Sequences processed at once.")
@click.option("-r", "--repetitions", default=5, show_default=True, type=Repetitions(),
              help="Counted repetitions of each test; 'auto' repeats until --target-ci is met.")
@click.option("--target-ci", metavar="PCT", help="Repeat each test until its 95% CI is within PCT of the mean (e.g. "
              "2%). [-r auto: 2%]")
@click.option("--max-repetitions", default=DEFAULT_MAX_REPETITIONS, show_default=True,
              type=Integer(min=2, max=MAX_COUNT), help="Cap of an adaptive run's repetitions per test.")
@click.option("--warmup", default=1, show_default=True, type=Integer(min=0, max=MAX_COUNT), help="Uncounted warm-up "
              "repetitions of each test.")
@click.option("--seed", default=42, show_default=True, type=Integer(min=None), help="Seed of the random prompt tokens.")
@click.option("--delay", default=0.0, show_default=True, type=Number(min=0, max=3600), metavar="S",
              help="Seconds of idle before each test but the first: a cool-down, as llama-bench's --delay.")
@click.option("-t", "--threads", metavar="N[,N]", help="CPU threads; a list makes one run each. [default: physical "
              "cores]")
@click.option("-ngl", "--n-gpu-layers", metavar="N[,N]",
              help="Layers on the GPU (llama.cpp); a list makes one run each, as llama-bench's -ngl.")
@click.option("-ncmoe", "--n-cpu-moe", metavar="N[,N]",
              help="Keep the experts of the first N layers in host memory (llama.cpp); a list makes one run each.")
@engine_option
@click.option("--engine-version", metavar="V,V[,V]",
              help="Run the workload on each of these engine versions, one run each, their repetitions taken in "
                   "turn (llama.cpp: llama-cpp-python releases, built now where not cached).")
@tag_option
@click.option("--hardware", metavar="NAME", help="Judge ceilings by this catalog chip's figures (see `pdx hw list`), "
              "or 'probe' for this machine's probes.")
@click.option("--reprobe", is_flag=True, help="Measure the bandwidth and FLOP/s probes again (else cached per machine "
              "and threads).")
@server_options
@energy_options
@registry_option
@json_option
@click.pass_context
def bench(ctx: click.Context, **params) -> None:
    """Measure prefill (pp) and decode (tg) and store every sample.

    Tests follow llama-bench: -p 512,1024 -n 128 -d 0,4096 -b 1,8 -r 5 gives
    pp512, pp1024 and tg128, each at depth 0 and 4096 and batch 1 and 8.
    """
    from pdx.reports.display import make_console
    from pdx.reports.display.ceilings import print_ceiling_moves

    as_json, versions = params["as_json"], params.pop("engine_version")
    configs = bench_plan(ctx, **params)
    if versions:
        runs = run_versions(configs, [v.strip() for v in versions.split(",") if v.strip()], params["registry"],
                            as_json)
    else:
        runs = execute(configs, params["registry"], as_json)
    if as_json:
        echo_json(runs)
    elif len(runs) > 1:
        print_ceiling_moves(runs, make_console())
    if any(run["status"] != "complete" for run in runs):
        ctx.exit(1)


def bench_plan(ctx: click.Context, backends, model, n_prompt, n_gen, prompt_gen, n_depth, batch, repetitions,
               target_ci, max_repetitions, warmup, seed, delay, threads, n_gpu_layers, n_cpu_moe, options, tags,
               hardware, reprobe, url, api_key, server_args, energy, price_kwh, registry, as_json,
               **plugin_options) -> list:
    """The runs ``pdx bench``'s options ask for, as :class:`pdx.api.BenchConfig` (``pdx bisect`` takes the same
    options after ``--``)."""
    from pdx import api

    first, target = adaptive_settings(repetitions, target_ci)
    workload = BenchOptions(n_prompt=n_prompt, n_gen=n_gen, prompt_gen=prompt_gen, depth=n_depth, batch=batch,
                            repetitions=first, warmup=warmup, seed=seed, target_ci=target,
                            max_repetitions=max_repetitions).workload()
    engine_options = parse_options(options, plugin_options, url=url)
    warn_energy(ctx, energy, price_kwh, engine_options.get("url"))
    base = api.BenchConfig(model=model, workload=workload, options=engine_options, tags=list(tags),
                           argv=api.command_line(), hardware=hardware, reprobe=reprobe, api_key=api_key,
                           delay=delay, energy=energy, price=price_kwh)
    thread_list = parse_int_list(threads, "-t", minimum=1, maximum=MAX_THREADS) if threads else None
    backend_list = [b.strip() for b in backends.split(",") if b.strip()] if backends else None
    variants = option_variants(server_args, n_gpu_layers, n_cpu_moe)
    return api.plan(base, backend_list, thread_list, variants)


def run_versions(configs: list, versions: list[str], registry: str | None, as_json: bool) -> list[dict]:
    """One run per engine version of the one run the options ask for, interleaved, each table printed."""
    from pdx import api
    from pdx.reports.display import make_console, print_run

    if len(configs) != 1:
        raise click.UsageError(f"--engine-version runs one workload per version; the options make {len(configs)} "
                               "runs (give one backend, one -t and one value of each run axis)")
    store = api.open_registry(registry)
    planned = api.engine_versions(configs[0], versions, say=lambda line: click.echo(line, err=True))
    runs = api.run_interleaved(planned, store)
    if not as_json:
        for run in runs:
            print_run(run, store.display_url, make_console())
    return runs


def run_and_show(config, store, as_json: bool) -> dict:
    """Run one benchmark with a progress bar and print its table (unless JSON is wanted)."""
    from pdx import api
    from pdx.cli.progress import bench_progress
    from pdx.reports.display import make_console, print_run

    workload = config.workload
    with bench_progress(len(workload.tests), workload.repetitions, enabled=not as_json) as progress:
        run = api.run_benchmark(config, store, progress)
    if not as_json:
        print_run(run, store.display_url, make_console())
    return run


# Which plugin added each option (the CLI is assembled once per call of ``pdx.cli.main``; options live as long).
_OWNER: weakref.WeakKeyDictionary[click.Parameter, str] = weakref.WeakKeyDictionary()


def add_plugin_options(command: click.Command, options: list[click.Option], plugin: str) -> None:
    """A plugin's options; the same plugin's again (the CLI is assembled once per call of
    ``pdx.cli.main``) replace nothing, another's of the same name are refused."""
    for option in options:
        if not isinstance(option, click.Option):
            raise PdxError(f"returned {option!r}, which is not a click.Option")
        if option.default is not None:
            raise PdxError(f"option {option.opts[0]} has a default; plugin options must default to None")
        taken = next((p for p in command.params if p.name == option.name or set(p.opts) & set(option.opts)), None)
        if taken is None:
            _OWNER[option] = plugin
            command.params.append(option)
        elif _OWNER.get(taken) != plugin:
            raise PdxError(f"option {option.opts[0]} clashes with {'/'.join(taken.opts)} of `pdx {command.name}`")


def register(cli: click.Group) -> None:
    cli.add_command(bench)
