"""Terminal tables of serving runs: latency percentiles, throughput, and each
scenario's own figures (the stall, the sweep's knee, the cache saving)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from pdx.serving.analysis import cache_summary, sweep_summary


def _ms(dist: dict | None, key: str) -> str:
    value = (dist or {}).get(key)
    return f"{value:.1f}" if isinstance(value, (int, float)) else "-"


def _num(value, fmt: str = ".2f") -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "-"


def serving_table(run: dict) -> Table:
    table = Table(header_style="bold")
    columns = ("test", "ok/sent", "req/s", "out tok/s", "tok/s/stream", "TTFT p50", "TTFT p99",
               "sched TTFT p99", "wait p99", "ITL p50", "ITL p99", "TPOT p50", "E2EL p50", "goodput")
    for column in columns:
        table.add_column(column, justify="left" if column == "test" else "right", no_wrap=True)
    for test in run["tests"]:
        stats = test.get("stats") or {}
        if test["kind"] != "serve" or not stats:
            table.add_row(test["name"], f"[red]{test['status']}[/red]: {test.get('error') or ''}")
            continue
        table.add_row(
            test["name"] + ("" if test["status"] == "ok" else f" [red]({test['status']})[/red]")
            + (" (as reported)" if stats.get("reported") else ""),
            f"{stats['completed']}/{stats['requests']}", _num(stats["request_throughput"]),
            _num(stats["output_throughput"], ".1f"), _num(stats["per_stream_decode_rate"], ".1f"),
            _ms(stats["ttft_ms"], "p50"), _ms(stats["ttft_ms"], "p99"), _ms(stats.get("ttft_sched_ms"), "p99"),
            _ms(stats.get("dispatch_ms"), "p99"), _ms(stats["itl_ms"], "p50"),
            _ms(stats["itl_ms"], "p99"), _ms(stats["tpot_ms"], "p50"), _ms(stats["e2el_ms"], "p50"),
            _num(stats.get("goodput")),
        )
    return table


ITL_NOTE = ("ITL: every gap between tokens, pooled over requests (a chunk of k tokens counts as k gaps), as vLLM; "
            "TPOT: each request's mean gap, which GuideLLM and AIPerf call ITL. sched TTFT: from the scheduled send, "
            "so the wait for a slot (wait) counts.")


def print_scenarios(run: dict, console: Console) -> None:
    """One line per scenario figure that spans requests or tests."""
    serving = [t for t in run["tests"] if t.get("kind") == "serve" and t.get("stats")]
    if serving:
        console.print(ITL_NOTE, style="dim", highlight=False)
    for test in serving:
        stats = test["stats"]
        if stats.get("ttft_sched_ms"):
            console.print(
                f"{test['name']}: from the schedule, TTFT p50 {_ms(stats['ttft_sched_ms'], 'p50')} / p99 "
                f"{_ms(stats['ttft_sched_ms'], 'p99')} ms, E2EL p50 {_ms(stats['e2el_sched_ms'], 'p50')} ms "
                f"(sent: TTFT p50 {_ms(stats['ttft_ms'], 'p50')} ms); dispatch delay p50 "
                f"{_ms(stats['dispatch_ms'], 'p50')} / p99 {_ms(stats['dispatch_ms'], 'p99')} ms; "
                f"chunks per token {_num(stats.get('chunks_per_token'))}", highlight=False)
        overhead = stats.get("overhead")
        if overhead and overhead["pairs"]:
            console.print(
                f"{test['name']}: TTFT p50 {overhead['ttft_median_ms']:.2f} ms; the engine's prefill p50 "
                f"{overhead['engine_prefill_median_ms']:.2f} ms ({overhead['in_process']}, in pdx's process); the "
                f"server's own part (TTFT minus prefill, pair by pair) p50 {overhead['server_part_median_ms']:.2f} ms "
                f"({overhead['server_part_share']:.0%} of TTFT; {overhead['pairs']} pairs); the server's own prefill "
                f"figure p50 {_num(overhead['server_reported_prefill_median_ms'], '.2f')} ms", highlight=False)
        elif overhead:
            console.print(f"{test['name']}: no TTFT split (a request failed)", highlight=False)
        claim = stats.get("prefix_cache")
        if claim and not claim["holds"]:
            console.print(f"[yellow]{test['name']}: " + (
                f"random prompts, yet the server's prefix cache served {claim['hits']:.0f} tokens: it has seen "
                "these prompts before (run again with another --seed, or restart the server)" if claim["claim"] == "cold"
                else "a shared prefix, yet no prefix-cache hits: is the server's prefix caching on?") + "[/yellow]",
                highlight=False)
        for turn in stats.get("turns") or []:
            console.print(f"{test['name']}: turn {turn['turn']}: {turn['requests']} requests, prompt "
                          f"{turn['prompt_mean']:.0f} tokens, TTFT p50 {turn['ttft_median_ms']:.1f} ms, from the "
                          f"prefix cache {_num(turn['cached_tokens_mean'], '.0f')} tokens", highlight=False)
        saturation = stats.get("saturation")
        if saturation:
            console.print(
                f"[yellow]{test['name']}: stopped early at {saturation['at_s']:.1f} s: over-saturated[/yellow] "
                f"(in the last {saturation['window_s']:g} s {saturation['due_in_window']} requests came due and "
                f"{saturation['ended_in_window']} ended; "
                f"scheduled TTFT {saturation['ttft_slope_ms_per_s']:+.1f} ms/s; {saturation['unsent_due']} due "
                f"requests never sent; test: {saturation['test']})", highlight=False)
    for test in serving:
        found = test["stats"].get("capacity")
        if found:
            print_capacity(test["name"], found, console)
    for test in run["tests"]:
        stall = (test.get("stats") or {}).get("stall")
        if stall:
            console.print(
                f"{test['name']}: {stall['streams']} streams, {stall['inject_prompt']}-token prompt prefilled in "
                f"{_num(stall['inject_ttft_ms'], '.1f')} ms; their ITL {_num(stall['itl_before_median_ms'], '.1f')} ms "
                f"before, max {_num(stall['itl_during_max_ms'], '.1f')} / p99 {_num(stall['itl_during_p99_ms'], '.1f')} ms "
                f"during; decode rate per stream {_num(stall['stream_rate_before'], '.1f')} -> "
                f"{_num(stall['stream_rate_during'], '.1f')} tok/s", highlight=False)
            if stall.get("streams_decoding_at_inject") == 0:
                console.print(f"  [yellow]{test['name']}: every stream had ended before the long prompt went in: "
                              "no stall was measured (a client or server held up by other work?)[/yellow]",
                              highlight=False)
    sweep = sweep_summary(run["tests"])
    if sweep:
        knee = sweep["measured_knee"]
        predicted = (run.get("ceiling_basis") or {}).get("knee_batch")
        console.print(f"concurrency sweep: measured knee at {knee if knee else 'none within the sweep'} "
                      f"(aggregate rate gains under half of linear past it); the ceilings predict decode turns "
                      f"compute-bound at batch {f'~{predicted:.3g}' if predicted else '(unknown)'}", highlight=False)
    cache = cache_summary(run["tests"])
    if cache:
        console.print(f"prefix cache: TTFT p50 cold {_num(cache['cold_ttft_median_ms'], '.1f')} ms, warm "
                      f"{_num(cache['warm_ttft_median_ms'], '.1f')} ms (saving {_num((cache['ttft_saving'] or 0) * 100, '.0f')}%); "
                      f"server hits cold {_num(cache['cold_prefix_hits'], '.0f')}, warm {_num(cache['warm_prefix_hits'], '.0f')}",
                      highlight=False)


def _axis(value, axis: str) -> str:
    if value is None:
        return "?"
    return f"c={value:g}" if axis == "concurrency" else f"{value:.3g} req/s"


def print_capacity(name: str, found: dict, console: Console) -> None:
    """The capacity, its bracket and what broke first, then one line per point measured."""
    slo = ", ".join(f"{k} {v:g} ms" for k, v in found["slo"].items())
    lo, hi = found["bracket"]
    if found["found"]:
        unit = "" if found["axis"] == "concurrency" else " req/s"
        head = (f"capacity {found['capacity']:.3g}{unit} (bracket {_axis(lo, found['axis'])} holds, "
                f"{_axis(hi, found['axis'])} breaks; +/- {found['uncertainty']:.2g}{unit})")
    else:
        head = f"capacity not bracketed: {found['note']} ({_axis(lo, found['axis'])} .. {_axis(hi, found['axis'])})"
    broke = found.get("broke_first")
    cause = f"; broke first: {broke} ({found['side']} side)" if broke and broke not in ("errors", "saturation") else (
        f"; broke first: {broke}" if broke else "")
    if found.get("out_of_time"):
        cause += "; [yellow]time budget spent: the bracket as it stood[/yellow]"
    console.print(f"[bold]{name}[/bold]: {head} for {slo} at p{found['percentile']:g}{cause}", highlight=False)
    for point in sorted(found["points"], key=lambda p: p["x"]):
        values = ", ".join(f"{k} {v:.1f} ms" if isinstance(v, (int, float)) else f"{k} -"
                           for k, v in point["values"].items())
        verdict = "holds" if point["held"] else f"breaks ({', '.join(point['broke'])})"
        stopped = point.get("gave_up")
        sent = (f"{point['requests']} of {stopped['of_planned']} requests (stopped once certain)"
                if stopped and stopped.get("of_planned") else f"{point['requests']} requests")
        console.print(f"  {_axis(point['x'], found['axis'])}: {verdict}; {values}; {sent}, "
                      f"{_num(point['output_throughput'], '.1f')} out tok/s", highlight=False)
