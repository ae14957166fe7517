"""Terminal tables of serving runs: latency percentiles, throughput and goodput, every latency
distribution, and each scenario's own figures (a capacity search, a stall, the sweep's knee, the
cache saving), all as :mod:`pdx.reports.figures` describes them."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from pdx.reports import figures
from pdx.reports.display.tables import Fitted, fit

ITL_NOTE = figures.ITL_NOTE


def _cells(table: figures.Table) -> list[list[str]]:
    rows = []
    for row in table.rows:
        if not row.cells:  # a test that stored no figures: its name, then why, in the notes
            cells = [escape(row.test)] + [figures.MISSING] * (len(table.columns) - 2)
            rows.append(cells + [f"[red]{escape(row.status)}: {escape(row.error or '')}[/red]"])
            continue
        out = []
        for column, cell in zip(table.columns, row.cells):
            text = escape(cell.text)
            if column.key == "test" and row.status != "ok":
                text += f" [red]({escape(row.status)})[/red]"
            out.append(f"[yellow]{text}[/yellow]" if cell.warn and text else text)
        rows.append(out)
    return rows


def fitted(table: figures.Table, width: int) -> Fitted:
    columns = list(table.columns)
    if any(not r.cells for r in table.rows) and columns[-1].key != "notes":
        columns.append(figures.NOTES_COLUMN)
    return fit(columns, _cells(table), width)


def serving_table(run: dict, width: int = 200):
    """The serving tests of ``run`` as one table (a rich Table), each figure with its unit."""
    return fitted(figures.serving_table([t for t in run["tests"] if figures.layout(t) == "serving"]), width).table


def _print_table(table: figures.Table | None, console: Console, title: str = "") -> None:
    if table is None or not table.rows:
        return
    done = fitted(table, console.width)
    if title:
        console.print(title, style="bold", highlight=False, markup=False)
    done.print(console)


def print_note(note: figures.Note, console: Console) -> None:
    text = escape(note.text)
    console.print(f"[yellow]{text}[/yellow]" if note.warn else text, highlight=False)
    for line in note.lines:
        console.print(f"  {escape(line)}", highlight=False)


def print_serving(run: dict, console: Console) -> None:
    """Everything of a run that is not its pp/tg rates table: the serving table, the latency
    distributions, each test's notes and the figures across tests."""
    shown = figures.shown(run)
    if shown.serving:
        _print_table(shown.serving, console)
        console.print(ITL_NOTE, style="dim", highlight=False, markup=False)
    _print_table(shown.latency, console, "latency distributions (ms)")
    for note in shown.notes:
        print_note(note, console)


def print_scenarios(run: dict, console: Console) -> None:
    """Each test's notes and the figures across tests (a sweep's knee, the cache saving)."""
    for note in figures.tests_notes(run) + figures.run_notes(run):
        print_note(note, console)


def print_capacity(name: str, found: dict, console: Console) -> None:
    """The capacity, its bracket and what broke first, then one line per point measured."""
    print_note(figures.capacity_note(name, found), console)
