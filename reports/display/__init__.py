"""Terminal output: llama-bench-like result tables and run listings."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pdx.reports import figures
from pdx.domain import placement
from pdx.domain.ceilings import described, overhead
from pdx.domain.engine_version import engine_text
from pdx.domain.models.words import quant_label
from pdx.reports.display.ceilings import (basis_line, bound_lines, ceiling_cell, fraction_cell, print_warnings,
                                         serve_lines)
from pdx.reports.display.serving import print_serving
from pdx.reports.display.tables import Fitted, fit
from pdx.reports.display.text import SafeConsole
from pdx.reports.figures import Column
from pdx.domain.headline import headline_test, rate
from pdx.reports.manifest import UNHASHED, model_hash_text, workload_text
from pdx.base.units import human_bytes, human_count


def make_console(stderr: bool = False) -> Console:
    """A console that does not wrap tables at 80 columns when output is piped or logged (200, or
    ``COLUMNS`` where set)."""
    console = SafeConsole(stderr=stderr)
    if console.is_terminal:
        return console
    columns = os.environ.get("COLUMNS", "")
    return SafeConsole(stderr=stderr, width=int(columns) if columns.isdigit() and int(columns) >= 40 else 200)


NOISY_CV = figures.NOISY_CV  # a rate whose coefficient of variation is above this is flagged as noisy


def _noise(test: dict, stats: dict) -> str:
    """Adaptive stop, noise and outlier flags for a result cell ("" when quiet)."""
    found = figures.rate_notes(dict(test, stats=stats))
    return f"  ({', '.join(_marked(text, warn) for text, warn in found)})" if found else ""


def _marked(text: str, warn: bool) -> str:
    text = escape(text)
    return f"[yellow]{text}[/yellow]" if warn else text


def _rate_cell(test: dict) -> str:
    stats = test.get("stats")
    if test["status"] != "ok" or not stats:
        return f"[red]{escape(test['status'])}[/red]"
    return escape(figures.RATE_COLUMNS[0].text(stats))


def _notes_cell(test: dict, bound: str | None = None) -> str:
    """The row's notes: a failure, then adaptive stop, noise, conditions, outliers, the engine's own rates,
    and the fixed cost per token where it binds (``bound``: :func:`pdx.domain.ceilings.overhead.notes`)."""
    said = []
    if test["status"] != "ok" or not test.get("stats"):
        said.append(f"[red]{escape(test.get('error') or test['status'])}[/red]")
    said += [_marked(text, warn) for text, warn in figures.row_notes(test)]
    if bound:
        said.append(escape(bound))
    return ", ".join(said)


# The terminal's ± is the standard deviation of the repetitions (as llama-bench prints it); pages show the
# 95% CI of the mean, and each says which in its header.
STDDEV = "± std dev"
_RUN_COLUMNS = ("model", "size", "params", "backend", "threads")  # the same on every row of a run


def _rates_columns(tests: list[dict], bounds: dict[str, str]) -> list[Column]:
    """The bench table's columns, llama-bench's first (left out first: a caption says them once)."""
    rate, per_seq, split = figures.RATE_COLUMNS
    columns = [Column("model", "model", keep=9, left=True), Column("size", "size", keep=10),
               Column("params", "params", keep=10), Column("backend", "backend", keep=8, left=True),
               Column("threads", "threads", keep=8), Column("test", "test", keep=0),
               Column(rate.key, rate.label, STDDEV, keep=rate.keep, about=rate.about)]
    if any(t.get("batch", 1) > 1 for t in tests):
        columns.append(Column(per_seq.key, per_seq.label, keep=per_seq.keep, about=per_seq.about))
    if any("prompt_rate" in (t.get("stats") or {}) for t in tests):
        columns.append(Column(split.key, split.label, keep=split.keep, about=split.about, wraps=True))
    columns += [Column("ceiling", "ceiling "
                       "t/s", keep=3, wraps=True), Column("fraction", "of ceiling", keep=0, wraps=True)]
    if any("energy" in (t.get("stats") or {}) for t in tests):
        energy = figures.ENERGY
        columns.append(Column(energy.key, energy.label, keep=energy.keep, about=energy.about))
    if any(_notes_cell(t, bounds.get(t["name"])) for t in tests):
        columns.append(figures.NOTES_COLUMN)
    return columns


def _model_cell(model: dict) -> str:
    """The model as its tool wrote it where it did (llama-bench's "qwen3next 80B.A3B Q4_K - Medium": shape
    words and quant kept; a display only, so no run's id moves), else its architecture, size and type."""
    written = (model.get("extra") or {}).get("model_type")
    if isinstance(written, str) and written.strip():
        return written.strip()
    if model.get("architecture") in (None, "", "?"):  # a serving tool's hub id: its name says what it is
        return str(model.get("name") or "?")
    return f"{model['architecture']} {human_count(model['n_params']).replace(' ', '')} {quant_label(model)}"


def _rates_rows(run: dict, tests: list[dict], columns: list[Column], bounds: dict[str, str]) -> list[list[str]]:
    model = run["model"]
    label = _model_cell(model)
    rows = []
    for test in tests:
        stats = test.get("stats") or {}
        ok = test["status"] == "ok" and stats
        cell = {"model": escape(label), "size": human_bytes(model["file_bytes"]),
                "params": human_count(model["n_params"]),
                "backend": escape(placement.backend_label(run)), "threads": str(run["threads"] or "?"),
                "test": escape(test["name"]),
                "rate": _rate_cell(test),
                "per_sequence_rate": f"{stats['per_sequence_rate']:.2f}" if ok else "",
                "prompt_rate": figures.RATE_COLUMNS[2].text(stats) if ok else "",
                "ceiling": ceiling_cell(test), "fraction": fraction_cell(test),
                "notes": _notes_cell(test, bounds.get(test["name"])),
                figures.ENERGY.key: figures.ENERGY.text(stats) if ok else ""}
        rows.append([cell[c.key] for c in columns])
    return rows


def _caption(run: dict, fitted: Fitted) -> str:
    """What the left-out run columns held, the same on every row, said once above the table."""
    model = run["model"]
    values = {"model": _model_cell(model),
              "size": human_bytes(model["file_bytes"]), "params": f"{human_count(model['n_params'])} params",
              "backend": placement.backend_label(run), "threads": f"{run['threads'] or '?'} threads"}
    return " · ".join(values[c.key] for c in fitted.left_out if c.key in values)


def fitted_run_table(run: dict, width: int = 200, tests: list[dict] | None = None) -> Fitted:
    """The bench table of ``tests`` (the run's pp/tg tests) in ``width`` columns."""
    tests = tests if tests is not None else [t for t in run["tests"] if figures.layout(t) == "rates"]
    bounds = overhead.notes(run)
    columns = _rates_columns(tests, bounds)
    return fit(columns, _rates_rows(run, tests, columns, bounds), width, above=_RUN_COLUMNS, show_edge=True)


def run_table(run: dict, width: int = 200) -> Table:
    return fitted_run_table(run, width).table


def print_rates(run: dict, tests: list[dict], console: Console) -> None:
    fitted = fitted_run_table(run, console.width, tests)
    caption = _caption(run, fitted)
    if caption:
        console.print(caption, highlight=False, markup=False)
    fitted.print(console)


def print_run(run: dict, registry_url: str, console: Console | None = None) -> None:
    console = console or make_console()
    rates = [t for t in run["tests"] if figures.layout(t) == "rates"]
    if rates or not run["tests"]:
        print_rates(run, rates, console)
        print_warnings(run, console)
        if (run.get("engine") or {}).get("settings", {}).get("mode") == "server":
            console.print("server figures over HTTP: pp from the TTFT of one-token requests, tg from first to last "
                          "token", highlight=False)

    print_serving(run, console)
    console.print(basis_line(run), highlight=False)
    for line in [*serve_lines(run), *bound_lines(run)]:
        console.print(line, highlight=False, markup=False)
    if (run.get("ceiling_basis") or {}).get("source") != "none":
        for names, why in described.uncovered(run):
            console.print(f"no ceiling for {names}: {why}", highlight=False)
    model = run["model"]
    hashed = model_hash_text(model)
    said = f"sha256 {hashed[:12]}" if hashed != UNHASHED else "not hashed"
    console.print(f"model {model['name']} ({said}), {model['path']}", highlight=False)
    shape = (model.get("extra") or {}).get("catalog_shape")
    if shape:
        by_bytes = (model.get("extra") or {}).get("sized_by_bytes")
        how = f"its bytes matched: {by_bytes['assumed']}" if by_bytes else "its name matched"
        console.print(f"model dims from the catalog shape {shape['name']} ({how}; {shape['assumed']})",
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
    added = figures.lengthened_text(run)
    console.print(f"run [bold]{run['id']}[/bold] {status}, stored in {registry_url}" + (f"; {added}" if added else ""),
                  highlight=False)


def _headline(run: dict, kind: str) -> str:
    """The run's headline test of a kind (:mod:`pdx.domain.headline`), as 'tg128 95.5'."""
    test = headline_test(run, kind)
    return f"{test['name']} {rate(test):.1f}" if test else ""


RUN_ID_CHARS = 12  # the id prefix lists show: `pdx show` takes any unique prefix of 4 or more
_RUNS_COLUMNS = (Column("id", "id", keep=0, left=True), Column("created", "created", keep=4, left=True),
                 Column("status", "status", keep=3, left=True), Column("backend", "backend", keep=2, left=True),
                 Column("model", "model", keep=1, left=True), Column("threads", "threads", keep=6),
                 Column("tests", "tests", keep=7), Column("pp", "pp t/s", keep=0), Column("tg", "tg t/s", keep=0),
                 Column("tags", "tags", keep=5, left=True, wraps=True))


def runs_table(runs: list[dict], width: int = 200) -> Fitted:
    """`pdx runs`: in ``width`` columns it keeps each run's id prefix and its pp and tg headlines whole;
    the columns that do not fit go under the table, a line a run."""
    rows = [[escape(run["id"][:RUN_ID_CHARS]), (run["created_at"] or "")[:16].replace("T", " "), escape(run["status"]),
             escape(run["backend"]), escape(run["model"]["name"]), str(run["threads"] or ""), str(len(run["tests"])),
             _headline(run, "pp"), _headline(run, "tg"), escape(", ".join(run["tags"]))] for run in runs]
    if not any(run["tags"] for run in runs):
        return fit(list(_RUNS_COLUMNS[:-1]), [row[:-1] for row in rows], width)
    return fit(list(_RUNS_COLUMNS), rows, width)


def print_manifest(run: dict, console: Console | None = None) -> None:
    console = console or make_console()
    env, hw, model, engine = run["environment"], run["hardware"], run["model"], run["engine"]
    cpu = hw.get("cpu", {})
    settings = ", ".join(f"{k}={v}" for k, v in sorted(engine["settings"].items()))
    rows = [
        ("created", run["created_at"]),
        ("finished", run["finished_at"] or "-"),
        ("status", run["status"] + (f" ({run['error']})" if run["error"] else "")),
        ("engine", engine_text(engine)),
        ("settings", settings or "-"),
        ("ran on", placement.text(placement.of_run(run)) or "-"),
        ("model", f"{model['path']}"),
        ("model sha256", model_hash_text(model)),
        ("hardware", f"{hw['name']} ({cpu.get('physical_cores') or '?'} cores, "
                     f"{cpu.get('logical_cores') or '?'} threads, {human_bytes(cpu.get('memory_bytes'))})"),
        ("system", f"{env.get('platform') or '?'}, Python {env.get('python') or '?'}, "
                   f"pdx {env.get('pdx_version') or '?'}"),
        ("workload", workload_text(run)),
        ("command", run["command"]),
        ("tags", ", ".join(run["tags"]) or "-"),
    ]
    for key, value in rows:
        console.print(f"[bold]{key:>13}[/bold]: {escape(str(value))}", highlight=False)


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
