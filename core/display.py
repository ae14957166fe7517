"""Terminal output: llama-bench-like result tables and run listings."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from pdx.ceiling_display import basis_line, ceiling_cell, fraction_cell, print_warnings


def make_console(stderr: bool = False) -> Console:
    """A console that does not wrap tables at 80 columns when output is piped or logged."""
    console = Console(stderr=stderr)
    return console if console.is_terminal else Console(stderr=stderr, width=200)


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def human_count(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return str(n)


def _rate_cell(test: dict) -> str:
    stats = test.get("stats")
    if test["status"] != "ok" or not stats:
        return f"[red]{test['status']}[/red]: {test.get('error') or ''}"
    rate = stats["rate"]
    text = f"{rate['mean']:.2f} ± {rate['stddev']:.2f}"
    if "prompt_rate" in stats:
        text += f"  (pp {stats['prompt_rate']['mean']:.1f}, tg {stats['gen_rate']['mean']:.1f})"
    return text


def run_table(run: dict) -> Table:
    model = run["model"]
    batched = any(t["batch"] > 1 for t in run["tests"])
    table = Table(title=None, show_edge=True, header_style="bold")
    for column, justify in (("model", "left"), ("size", "right"), ("params", "right"), ("backend", "left"),
                            ("threads", "right"), ("test", "right"), ("t/s", "right")):
        table.add_column(column, justify=justify, no_wrap=True)
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
    console.print(run_table(run))
    print_warnings(run, console)
    console.print(basis_line(run), highlight=False)
    model = run["model"]
    console.print(f"model {model['name']} (sha256 {model['sha256'][:12]}), {model['path']}", highlight=False)
    engine = run["engine"]
    build = " ".join(x for x in (engine.get("version"), engine.get("commit") and f"({engine['commit']})") if x)
    console.print(f"{engine['name']} {build}".strip(), highlight=False)
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
        ("system", f"{env['platform']}, Python {env['python']}, pdx {env['pdx_version']}"),
        ("workload", f"{run['workload']['repetitions']} repetitions, {run['workload']['warmup']} warm-up, "
                     f"seed {run['workload']['seed']}"),
        ("command", run["command"]),
        ("tags", ", ".join(run["tags"]) or "-"),
    ]
    for key, value in rows:
        console.print(f"[bold]{key:>13}[/bold]: {value}", highlight=False)
