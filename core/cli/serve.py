"""``pdx serve-bench``: a server under load: latency distributions, concurrency
sweeps, chunked-prefill stalls and prefix-cache state."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from pdx.cli.base import (Integer, IntegerList, Label, Number, echo_json, energy_options, engine_option, json_option,
                          registry_option, server_options, tag_option, warn, warn_energy)
from pdx.cli.bench import execute, parse_options, run_and_show, server_variants
from pdx.contract.errors import PdxError
from pdx.contract.numbers import MAX_COUNT, MAX_TOKENS, parse_float
from pdx.domain.serving.capacity import DEFAULT_BUDGET_S, DEFAULT_PERCENTILE, DEFAULT_PRECISION, parse_capacity_slo
from pdx.domain.serving.metrics import parse_percentiles, parse_slo
from pdx.domain.serving.saturation import DEFAULT_WINDOW_S
from pdx.domain.workload import parse_int_list

if TYPE_CHECKING:  # the workload module is imported when the command runs
    from pdx.domain.serving.workloads import Traffic


def _rates(text: str | None) -> list[float] | None:
    if not text:
        return None

    try:  # inf: every request at once; NaN or 1e400 are no rate
        return [math.inf if r.strip() == "inf" else parse_float(r, "--request-rate", 0, min_open=True)
                for r in text.split(",")]
    except PdxError:
        raise click.BadParameter(f"{text!r}: give numbers per second, or inf", param_hint="--request-rate") from None


def _traffic(system_prompt: int | None, turns: int | None, input_dist: str | None, output_dist: str | None,
             ramp_up: float | None, trace: str | None, think_time: float | None = None) -> Traffic:
    """The traffic-shape fields given (pdx.domain.serving.traffic), as ServeSpec takes them."""
    given: Traffic = {}
    if system_prompt is not None:
        given["system_prompt"] = system_prompt
    if turns is not None:
        given["turns"] = turns
    if input_dist is not None:
        given["input_dist"] = input_dist
    if output_dist is not None:
        given["output_dist"] = output_dist
    if ramp_up is not None:
        given["ramp_s"] = ramp_up
    if trace is not None:
        given["trace"] = trace
    if think_time is not None:
        given["think_s"] = think_time
    return given


@click.command("serve-bench")
@click.option("--backend", "backends", metavar="NAME[,NAME]", required=True, help="Server backend(s): vllm-server, "
              "llamacpp-server, openai (see `pdx backends`).")
@click.option("-m", "--model", metavar="PATH", help="Model to serve. [default: a synthetic ~100M llama; with --url: "
              "what the server serves]")
@click.option("--scenario", type=click.Choice(["load", "sweep", "stall", "cache", "capacity", "overhead"]),
              default="load", show_default=True,
              help="load: one load shape; sweep: concurrency 1,4,16; stall: a long prompt among decode streams; cache: "
              "cold vs warm prefix; capacity: the largest request rate (or -c: concurrency) that holds --slo; "
              "overhead: TTFT split into the engine's prefill (run in pdx's process too) and the server's own part, "
              "per -p length.")
@click.option("-p", "--input-len", default="128", show_default=True, metavar="N[,N]",
              type=IntegerList(min=1, max=MAX_TOKENS), help="Prompt tokens per request (overhead: a list of lengths).")
@click.option("-n", "--output-len", default=32, show_default=True, type=Integer(min=1, max=MAX_TOKENS),
              help="Generated tokens per request (EOS ignored).")
@click.option("-c", "--concurrency", metavar="N[,N]", help="Requests in flight (closed loop); a list sweeps.")
@click.option("--request-rate", metavar="R[,R]", help="Requests per second (open loop, Poisson or gamma); inf sends "
              "all at once.")
@click.option("--burstiness", default=1.0, show_default=True, type=Number(min=0, min_open=True), help="Gamma shape of "
              "the arrivals (1: Poisson; <1 burstier).")
@click.option("--max-concurrency", type=Integer(min=1, max=MAX_COUNT), help="Cap on requests in flight (open loop).")
@click.option("--catch-up", is_flag=True, help="Open loop: send late requests as soon as a slot frees, in a burst if "
              "need be. [default: each keeps its own gap after the one before]")
@click.option("--saturation-window", default=DEFAULT_WINDOW_S, show_default=True, type=Number(min=0, max=1e7),
              metavar="S",
              help="Open loop: stop a test once its queue and TTFT both rise over this many seconds (0: never).")
@click.option("--num-requests", type=Integer(min=1, max=MAX_COUNT), help="Requests per test. [default: 4 x "
              "concurrency, at least 8]")
@click.option("--duration", type=Number(min=0, min_open=True, max=1e7), help="Seconds of sending per test, instead of "
              "--num-requests.")
@click.option("--system-prompt", type=Integer(min=1, max=MAX_TOKENS), metavar="S", help="Traffic: a shared system "
              "prompt of S tokens ahead of every request.")
@click.option("--turns", type=Integer(min=2, max=MAX_COUNT), metavar="T", help="Traffic: conversations of T turns, "
              "each sending the history and a new user part.")
@click.option("--think-time", type=Number(min=0, max=3600), metavar="S", help="Traffic: with --turns, each turn waits "
              "for the one before to end, then S seconds (a user reading and typing), so a prefix cache's expiry "
              "shows. [default: turns go in order, without waiting]")
@click.option("--input-dist", metavar="DIST", help="Traffic: user-part lengths around -p: fixed, uniform:S (within +/- "
              "S of the mean, S a fraction: uniform:0.25) or lognormal:SIGMA.")
@click.option("--output-dist", metavar="DIST", help="Traffic: generated lengths around -n, as --input-dist.")
@click.option("--ramp-up", type=Number(min=0, min_open=True, max=1e7), metavar="S", help="Open loop: raise the rate "
              "linearly to --request-rate over S seconds.")
@click.option("--trace", type=click.Path(dir_okay=False), metavar="FILE.jsonl", help="Replay a trace: one JSON line "
              "per request, timestamp (s), input_len, output_len[, conversation_id].")
@click.option("--inject", default=1024, show_default=True, type=Integer(min=1, max=MAX_TOKENS), help="stall: tokens of "
              "the long prompt.")
@click.option("--prefix", type=Integer(min=1, max=MAX_TOKENS), help="cache: tokens the warm prompts share. [default: "
              "3/4 of the prompt]")
@click.option("--warmup-requests", default=1, show_default=True, type=Integer(min=0, max=MAX_COUNT), help="Uncounted "
              "requests before each test.")
@click.option("--slo", metavar="METRIC=TIME,...", help="Goodput targets, e.g. ttft=500ms,tpot=50ms (ttft, tpot, itl, "
              "e2el); capacity: also p=PERCENTILE [default: 90].")
@click.option("--precision", default=DEFAULT_PRECISION, show_default=True, type=Number(min=0, min_open=True, max=1e6),
              help="capacity: stop the search once the bracket's hi / lo - 1 is at most this.")
@click.option("--budget", default=DEFAULT_BUDGET_S, show_default=True, type=Number(min=0, max=1e7), metavar="S",
              help="capacity: start no new point after S seconds and report the bracket as it stands (0: no limit).")
@click.option("--percentiles", metavar="P,P", help="Percentiles to report. [default: 50,90,95,99]")
@click.option("-r", "--repetitions", default=1, show_default=True, type=Integer(min=1, max=MAX_COUNT), help="Runs of "
              "each test.")
@click.option("--seed", default=42, show_default=True, type=Integer(min=None), help="Seed of the prompts and arrivals.")
@click.option("--clients", default=1, show_default=True, type=Integer(min=1, max=256), metavar="N",
              help="Split each load test over N client processes (one process times up to its limit: see the run's "
                   "client note); their requests merge into one run.")
@click.option("--ray", "ray_address", type=Label(256), metavar="ADDRESS|auto",
              help="Run the --clients as Ray actors spread over a cluster's nodes (pip install 'pdx[ray]').")
@click.option("--server-grid", metavar="KEY=V,V;...|FILE",
              help="Sweep the server's configuration: one run per combination, the server started anew for "
                   "each, in a shuffled order, e.g. 'np=4,8,16;fa=on,off' (keys: docs/serving.md).")
@click.option("--sweep", "sweep_id", metavar="ID", help="With --server-grid: resume sweep ID, skipping the "
              "combinations it completed.")
@engine_option
@tag_option
@server_options
@energy_options
@registry_option
@json_option
@click.pass_context
def serve_bench(ctx, backends, model, scenario, input_len, output_len, concurrency, request_rate, burstiness,
                max_concurrency, catch_up, saturation_window, num_requests, duration, system_prompt, turns,
                input_dist, output_dist, ramp_up, trace, think_time, inject, prefix, warmup_requests,
                slo, precision, budget, percentiles, repetitions, seed, clients, ray_address, server_grid, sweep_id,
                options, tags, url, api_key, server_args, energy, price_kwh, registry, as_json,
                **plugin_options) -> None:
    """Measure a server under load: TTFT, ITL, TPOT, E2EL, throughput, goodput.

    A request fails once it has taken longer than 10 s + 0.1 s per prompt token + 1 s per generated token,
    times the requests in flight when it was sent (so a server that accepts and never answers stops a short
    test in seconds); -o request_timeout=SECONDS sets one limit for every request instead."""
    from pdx import api
    from pdx.measure.serving.shards import require_ray
    from pdx.domain.serving.workloads import ServeOptions, serve_workload

    targets, slo_percentile = parse_capacity_slo(slo) if scenario == "capacity" else (parse_slo(slo),
                                                                                      DEFAULT_PERCENTILE)
    workload = serve_workload(ServeOptions(
        scenario=scenario, n_prompt=input_len[0], n_gen=output_len,
        concurrency=parse_int_list(concurrency, "-c", minimum=1, maximum=MAX_COUNT) if concurrency else None,
        rates=_rates(request_rate), burstiness=burstiness, max_concurrency=max_concurrency, n_requests=num_requests,
        duration_s=duration, inject=inject, prefix=prefix, warmup_requests=warmup_requests, slo=targets,
        slo_percentile=slo_percentile, precision=precision, budget_s=budget,
        percentiles=parse_percentiles(percentiles), repetitions=repetitions, seed=seed, catch_up=catch_up,
        saturation_window_s=saturation_window, prompt_lens=input_len, clients=clients, ray_address=ray_address,
        traffic=_traffic(system_prompt, turns, input_dist, output_dist, ramp_up, trace, think_time)))
    if ray_address and clients > 1:
        require_ray()
    if ray_address and clients == 1:
        warn("--ray: ignored with one client: the test runs in this process; give --clients N (2 or more) to "
             "spread it over the cluster's nodes")
    engine_options = parse_options(options, plugin_options, url=url)
    warn_energy(ctx, energy, price_kwh, engine_options.get("url"))
    base = api.BenchConfig(model=model, workload=workload, options=engine_options,
                           tags=list(tags), argv=api.command_line(), api_key=api_key, energy=energy,
                           price=price_kwh)
    backend_list = [b.strip() for b in backends.split(",") if b.strip()]
    failed: list[str] = []
    if server_grid:
        sweep_id, configs = sweep_configs(base, backend_list, server_grid, sweep_id, server_args, registry)
        runs, failed = execute_sweep(configs, registry, as_json)
        if not as_json:
            from pdx.reports.display import make_console
            from pdx.reports.display.sweep import print_sweep

            print_sweep(sweep_id, api.sweep_runs(api.open_registry(registry), sweep_id), make_console())
    elif sweep_id:
        raise click.UsageError("--sweep resumes a --server-grid sweep: give the grid too")
    else:
        runs = execute(api.plan(base, backend_list, variants=server_variants(server_args)), registry, as_json)
    if as_json:
        echo_json(runs)
    if failed or any(run["status"] != "complete" for run in runs):
        ctx.exit(1)


def sweep_configs(base, backends: list[str], server_grid: str, sweep_id: str | None, server_args: tuple[str, ...],
                  registry: str | None) -> tuple[str, list]:
    """The sweep's id and its runs still to make; says the id (to resume it) and what it skips."""
    from pdx import api

    if len(server_args) > 1:
        raise click.UsageError("--server-grid makes the runs: give --server-args once (flags every run shares)")
    if server_args:
        base = replace(base, options=base.options | {"server_args": server_args[0]})
    plan = api.plan_sweep(base, backends, server_grid, api.open_registry(registry), sweep_id)
    total = len(plan.configs) + len(plan.skipped)
    said = f"sweep {plan.sweep_id}: {total} combinations"
    if plan.skipped:
        said += f", {len(plan.skipped)} already complete (skipped)"
    said += f"; resume it with --sweep {plan.sweep_id}" if plan.configs else "; nothing is left to run"
    click.echo(said, err=True)
    return plan.sweep_id, plan.configs


def execute_sweep(configs: list, registry: str | None, as_json: bool) -> tuple[list[dict], list[str]]:
    """Each combination's run; one whose server will not start (a flag it refuses) is said in a line and
    the sweep goes on, so one bad value costs its own combinations only (a resumed sweep tries them again)."""
    from pdx import api
    from pdx.domain.serving import grid

    store = api.open_registry(registry)
    runs, failed = [], []
    for config in configs:
        try:
            runs.append(run_and_show(config, store, as_json))
        except PdxError as exc:
            said = f"{config.backend} {grid.label(grid.settings(config.tags))}: {exc}"
            warn(f"sweep: {said}; the sweep goes on")
            failed.append(said)
    if failed:
        warn(f"sweep: {len(failed)} of {len(configs)} combinations made no run: " + "; ".join(failed))
    return runs, failed


def register(cli: click.Group) -> None:
    cli.add_command(serve_bench)
