"""Terminal output: llama-bench-like result tables and run listings."""

from __future__ import annotations

import os

from rich.console import Console
from rich.table import Table

# aliased: the submodule pdx.display.conditions, once imported, would take the bare name
from pdx import conditions as machine_conditions
from pdx.ceilings import described
from pdx.display.ceilings import basis_line, ceiling_cell, fraction_cell, print_warnings
from pdx.units import human_bytes, human_count


def make_console(stderr: bool = False) -> Console:
    """A console that does not wrap tables at 80 columns when output is piped or logged (200, or
    ``COLUMNS`` where set)."""
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    columns = os.environ.get("COLUMNS", "")
    return Console(stderr=stderr, width=int(columns) if columns.isdigit() and int(columns) >= 40 else 200)


# A rate whose coefficient of variation is above this is flagged as noisy.
NOISY_CV = 0.05


def _noise(test: dict, stats: dict) -> str:
    """Adaptive stop, noise and outlier flags for a result cell ("" when quiet)."""
    notes = []
    adaptive = test.get("adaptive")
    if adaptive:
        ci = adaptive["achieved_ci"]
        notes.append(f"n={adaptive['repetitions']} ±{ci:.1%}" if ci is not None else f"n={adaptive['repetitions']}")
        if adaptive["stopped_by"] == "cap":
            notes.append("[yellow]cap reached[/yellow]")
    why = ", ".join(machine_conditions.notes(test.get("conditions")))  # what pdx saw the machine do meanwhile
    if stats.get("cv") is not None and stats["cv"] > NOISY_CV:
        notes.append(f"[yellow]noisy: cv {stats['cv']:.0%}{', ' + why if why else ''}[/yellow]")
    elif why:
        notes.append(f"[yellow]{why}[/yellow]")
    if stats.get("outliers"):
        count = len(stats["outliers"])
        notes.append(f"[yellow]{count} outlier{'s' if count > 1 else ''}[/yellow]")
    if stats.get("reported"):
        notes.append("as reported")
    return f"  ({', '.join(notes)})" if notes else ""


def _rate_cell(test: dict) -> str:
    stats = test.get("stats")
    if test["status"] != "ok" or not stats:
        return f"[red]{test['status']}[/red]: {test.get('error') or ''}"
    rate = stats["rate"]
    stddev = f"{rate['stddev']:.2f}" if rate["stddev"] is not None else "?"
    text = f"{rate['mean']:.2f} ± {stddev}"
    if "prompt_rate" in stats:
        text += f"  (pp {stats['prompt_rate']['mean']:.1f}, tg {stats['gen_rate']['mean']:.1f})"
    return text + _noise(test, stats) + _own_rates(test)


def _own_rates(test: dict) -> str:
    """The engine's own rates for the test, by its own definitions, where a backend keeps them."""
    own = (test.get("engine") or {}).get("own_rates")
    figures = [f"{phase} {own[phase]:.1f}" for phase in ("pp", "tg") if own and own.get(phase) is not None]
    return f"  ({own.get('label', 'engine')}'s own: {', '.join(figures)})" if figures else ""


def run_table(run: dict) -> Table:
    model = run["model"]
    batched = any(t["batch"] > 1 for t in run["tests"])
    table = Table(title=None, show_edge=True, header_style="bold")
    for column, justify in (("model", "left"), ("size", "right"), ("params", "right"), ("backend", "left"),
                            ("threads", "right")):
        table.add_column(column, justify=justify, no_wrap=True)
    table.add_column("test", justify="right", no_wrap=True, min_width=max([4, *(len(t["name"]) for t in run["tests"])]))
    # The one column that wraps: its notes (noise, what the machine did meanwhile) can be long, and a
    # table wider than the console would otherwise cut the short cells, a test's name among them.
    table.add_column("t/s", justify="right")
    if batched:
        table.add_column("t/s per seq", justify="right")
    table.add_column("ceiling t/s", justify="right", no_wrap=True)
    table.add_column("of ceiling", justify="right", no_wrap=True)
    label = f"{model['architecture']} {human_count(model['n_params']).replace(' ', '')} {model['dtype']}"
    for test in run["tests"]:
        row = [label, human_bytes(model["file_bytes"]), human_count(model["n_params"]), run["backend"],
               str(run["threads"] or "?"), test["name"], _rate_cell(test)]
        if batched:
            stats = test.get("stats")
            row.append(f"{stats['per_sequence_rate']:.2f}" if stats and test["status"] == "ok" else "")
        table.add_row(*row, ceiling_cell(test), fraction_cell(test))
    return table


def print_run(run: dict, registry_url: str, console: Console | None = None) -> None:
    console = console or make_console()
    if any(t.get("kind") == "serve" for t in run["tests"]):
        from pdx.display.serving import print_scenarios, serving_table

        console.print(serving_table(run))
        print_scenarios(run, console)
    else:
        console.print(run_table(run))
        print_warnings(run, console)
        if (run.get("engine") or {}).get("settings", {}).get("mode") == "server":
            console.print("server figures over HTTP: pp from the TTFT of one-token requests, tg from first to last "
                          "token", highlight=False)
    console.print(basis_line(run), highlight=False)
    if (run.get("ceiling_basis") or {}).get("source") != "none":
        for names, why in described.uncovered(run):
            console.print(f"no ceiling for {names}: {why}", highlight=False)
    model = run["model"]
    console.print(f"model {model['name']} (sha256 {model['sha256'][:12]}), {model['path']}", highlight=False)
    shape = (model.get("extra") or {}).get("catalog_shape")
    if shape:
        console.print(f"model dims from the catalog shape {shape['name']} (its name matched; {shape['assumed']})",
                      highlight=False)
    engine = run["engine"]
    build = " ".join(x for x in (engine.get("version"), engine.get("commit") and f"({engine['commit']})") if x)
    console.print(f"{engine['name']} {build}".strip(), highlight=False)
    origin, provenance = run.get("origin", "pdx"), run.get("provenance") or {}
    if origin != "pdx":
        console.print(f"imported from {origin} ({provenance.get('file', '?')})", highlight=False)
    if run.get("parent_id"):
        drift = provenance.get("drift")
        changed = f", drifted: {', '.join(drift)}" if drift else ""
        console.print(f"rerun of {run['parent_id']}{changed}", highlight=False)
    status = run["status"] if run["status"] == "complete" else f"[yellow]{run['status']}[/yellow]"
    console.print(f"run [bold]{run['id']}[/bold] {status}, stored in {registry_url}", highlight=False)


def _headline(run: dict, kind: str) -> str:
    """The first successful test of a kind, as 'tg128 95.5'."""
    for test in run["tests"]:
        if test["kind"] == kind and test["status"] == "ok" and test.get("stats"):
            return f"{test['name']} {test['stats']['rate']['mean']:.1f}"
    return ""


def runs_table(runs: list[dict]) -> Table:
    table = Table(header_style="bold")
    for column, justify in (("id", "left"), ("created", "left"), ("status", "left"), ("backend", "left"),
                            ("model", "left"), ("threads", "right"), ("tests", "right"), ("pp t/s", "right"),
                            ("tg t/s", "right"), ("tags", "left")):
        table.add_column(column, justify=justify, no_wrap=column != "tags")
    for run in runs:
        table.add_row(
            run["id"][:12],
            (run["created_at"] or "")[:19].replace("T", " "),
            run["status"],
            run["backend"],
            run["model"]["name"],
            str(run["threads"] or ""),
            str(len(run["tests"])),
            _headline(run, "pp"),
            _headline(run, "tg"),
            ",".join(run["tags"]),
        )
    return table


def _workload_text(workload: dict) -> str:
    reps = f"{workload['repetitions']} repetitions"
    if workload.get("target_ci"):
        reps = (f"repeated to a {workload['target_ci']:.1%} CI (first {workload['repetitions']}, "
                f"at most {workload['max_repetitions']})")
    return f"{reps}, {workload['warmup']} warm-up, seed {workload['seed']}"


def print_manifest(run: dict, console: Console | None = None) -> None:
    console = console or make_console()
    env, hw, model, engine = run["environment"], run["hardware"], run["model"], run["engine"]
    cpu = hw.get("cpu", {})
    settings = ", ".join(f"{k}={v}" for k, v in sorted(engine["settings"].items()))
    rows = [
        ("created", run["created_at"]),
        ("finished", run["finished_at"] or "-"),
        ("status", run["status"] + (f" ({run['error']})" if run["error"] else "")),
        ("engine", f"{engine['name']} {engine.get('version') or ''} {engine.get('commit') or ''}".strip()),
        ("settings", settings or "-"),
        ("model", f"{model['path']}"),
        ("model sha256", model["sha256"]),
        ("hardware", f"{hw['name']} ({cpu.get('physical_cores') or '?'} cores, "
                     f"{cpu.get('logical_cores') or '?'} threads, {human_bytes(cpu.get('memory_bytes'))})"),
        ("system", f"{env.get('platform') or '?'}, Python {env.get('python') or '?'}, "
                   f"pdx {env.get('pdx_version') or '?'}"),
        ("workload", _workload_text(run["workload"])),
        ("command", run["command"]),
        ("tags", ", ".join(run["tags"]) or "-"),
    ]
    for key, value in rows:
        console.print(f"[bold]{key:>13}[/bold]: {value}", highlight=False)


def print_check(result, console: Console | None = None) -> None:
    """asv-style comparison lines: mark, baseline and new median t/s, time ratio, test."""
    console = console or make_console()
    base, run = result.baseline, result.run
    console.print(f"baseline {base['id'][:12]} ({base['created_at'][:19]}, {base['threads'] or '?'} threads) vs "
                  f"run {run['id'][:12]} ({run['created_at'][:19]}, {run['threads'] or '?'} threads), "
                  f"factor {result.factor}, alpha {result.alpha}", highlight=False)
    console.print(f"{'':2}{'baseline t/s':>14}{'new t/s':>12}{'ratio':>8}{'p':>9}  test", highlight=False)
    for c in result.comparisons:
        figures = (f"{c.base_rate:>14.2f}{c.new_rate:>12.2f}{c.ratio:>8.2f}{c.p_value:>9.4f}"
                   if c.ratio is not None else f"{'-':>14}{'-':>12}{'-':>8}{'-':>9}")
        note = f"  ({c.note})" if c.note else ""
        console.print(f"{c.mark} {figures}  {c.name}{note}", highlight=False, markup=False)
    verdict = (f"[red]{len(result.regressions)} regression(s)[/red]" if result.regressions
               else "[green]no significant regression[/green]")
    console.print(verdict)
