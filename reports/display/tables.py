"""Tables that fit the terminal: no figure is cut and no column squeezed to nothing. A column that
does not fit is left out of the table, least useful first, and its figures go under the table, a
line a row; the table says so in one line.

Each column is a :class:`pdx.reports.figures.Column`: its ``keep`` says how long it stays (0: always), its
``wraps`` whether its text may wrap onto more lines (notes; a number never wraps). A table first
gives up the columns that are the same on every row (``keep`` of :data:`LEAVE_FIRST` or more: the
caller says them once, above), then sends notes that would wrap onto many lines under the table,
then lets the remaining notes wrap, then gives up the other columns, least useful first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from pdx.reports.figures import Column

LEAVE_FIRST = 8  # columns kept no longer than this (the same on every row) go before any text wraps
NOTE_LINES = 3  # a row's notes may wrap onto this many lines; longer, they go under the table
TABLE_EDGE = 1  # the table's left edge; each column adds its two padding cells and one rule
KEYS = ("test", "latency")  # the columns that name a row, in the lines under the table


@dataclass(slots=True)
class Fitted:
    table: Table
    left_out: list[Column] = field(default_factory=list)
    width: int = 0
    under: list[str] = field(default_factory=list)  # the left-out figures, a line a row (markup)
    above: tuple[str, ...] = ()  # keys of left-out columns the caller says above the table

    def print(self, console) -> None:
        """The table, the line saying what was left out, and the left-out figures under it."""
        console.print(self.table)
        said = self.left_out_line()
        if said:
            console.print(said, style="dim", highlight=False, markup=False)
        for line in self.under:
            console.print(line, highlight=False)

    def left_out_line(self) -> str:
        """One line, no wider than the table's width, naming the columns left out and where their
        figures are ("" when none)."""
        gone = [c.label for c in self.left_out if c.key not in self.above]
        above = [c.label for c in self.left_out if c.key in self.above]
        if not gone:
            return f"{', '.join(above)}: above the table" if above else ""
        tail = " (under the table); the run's columns above it" if above else " (under the table, a line a row)"
        head = f"left out at {self.width} columns: "
        for shown in range(len(gone), 0, -1):
            more = f", +{len(gone) - shown} more" if shown < len(gone) else ""
            line = f"{head}{', '.join(gone[:shown])}{more}{tail}"
            if len(line) <= self.width:
                return line
        return f"{head}{len(gone)}{tail}"


def _width(markup: str) -> int:
    return max((cell_len(line) for line in Text.from_markup(markup).plain.split("\n")), default=0)


def _word(markup: str) -> int:
    return max((cell_len(w) for w in Text.from_markup(markup).plain.replace("\n", " ").split(" ")), default=0)


def _header(column: Column) -> str:
    """The label over its unit."""
    return f"{column.label}\n{column.unit}" if column.unit else column.label


def _under(columns: list[Column], row: list[str], kept: list[int], above: tuple[str, ...]) -> str:
    """A row's left-out figures in one line: "name: label value unit, ...; notes" ("" when none)."""
    figures, notes = [], []
    for i, column in enumerate(columns):
        value = row[i] if i < len(row) else ""
        if i in kept or column.key in above or not Text.from_markup(value).plain.strip("- "):
            continue
        if column.wraps:
            notes.append(value)
        else:
            figures.append(f"{column.label} {value}{' ' + column.unit if column.unit else ''}")
    if not figures and not notes:
        return ""
    name = " ".join(row[i] for i in kept if columns[i].key in KEYS) or row[0]
    return f"{name}: {'; '.join(filter(None, [', '.join(figures), *notes]))}"


def fit(columns: list[Column], rows: list[list[str]], width: int, above: tuple[str, ...] = (),
        **table_options) -> Fitted:
    """A rich table of ``rows`` (rich markup, one cell a column) that fits in ``width`` columns;
    ``above``: keys of the columns whose one value the caller prints above the table when they are
    left out (the run's own columns of a bench table)."""
    cells = [max([_width(row[i]) for row in rows if i < len(row)], default=0) for i in range(len(columns))]
    words = [max([_word(row[i]) for row in rows if i < len(row)], default=0) for i in range(len(columns))]
    headers = [max(len(line) for line in _header(c).split("\n")) for c in columns]
    natural = [max(cells[i], headers[i]) for i in range(len(columns))]
    # The narrowest a column can be: a figure whole, a note at its longest word, its header whole.
    least = [max(words[i], headers[i]) if c.wraps else natural[i] for i, c in enumerate(columns)]
    kept = list(range(len(columns)))

    def total(widths: list[int]) -> int:
        return TABLE_EDGE + sum(widths[i] + 3 for i in kept)

    def drop(limit: int) -> bool:
        """Leave out the least useful column kept no longer than ``limit``; False if there is none."""
        candidates = [i for i in kept if columns[i].keep >= limit and columns[i].keep > 0]
        if not candidates:
            return False
        kept.remove(max(candidates, key=lambda i: (columns[i].keep, i)))
        return True

    while total(natural) > width and drop(LEAVE_FIRST):
        pass
    # Notes that would wrap onto more than a few lines beside their row go under the table instead.
    for i in [i for i in kept if columns[i].wraps and columns[i].key == "notes"]:
        room = width - (total(natural) - natural[i] - 3) - 3
        if total(natural) > width and room * NOTE_LINES < cells[i]:
            kept.remove(i)
    while total(least) > width and drop(1):
        pass
    table = Table(header_style="bold", **table_options)
    for i in kept:
        column = columns[i]
        table.add_column(_header(column), justify="left" if column.left else "right", no_wrap=not column.wraps,
                         min_width=least[i], overflow="fold")
    for row in rows:
        table.add_row(*(row[i] if i < len(row) else "" for i in kept))
    under = [line for row in rows if (line := _under(columns, row, kept, above))]
    return Fitted(table, [columns[i] for i in range(len(columns)) if i not in kept], width, under, tuple(above))
