"""A progress display for long benchmarks (stderr, only on a terminal)."""

from __future__ import annotations

import contextlib
from typing import Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

from pdx.reports.display.text import SafeConsole
from pdx.measure.runner import Progress


@contextlib.contextmanager
def bench_progress(n_tests: int, repetitions: int, enabled: bool = True) -> Iterator[Progress]:
    console = SafeConsole(stderr=True)

    def warning(text: str) -> None:  # said even when the bar is off: it may explain every figure that follows
        console.print(f"[bold yellow]warning:[/bold yellow] {text}", highlight=False)

    if not enabled or not console.is_terminal:
        yield Progress(warning=warning)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Bar(*columns, console=console, transient=True) as bar:
        task = bar.add_task("starting", total=n_tests * repetitions)

        def started(i, test):
            bar.update(task, description=f"test {i + 1}/{n_tests} {test.name}")

        yield Progress(
            test_started=started,
            sample_done=lambda i, t, s: bar.advance(task),
            test_done=lambda outcome: bar.update(task, completed=(outcome.ordinal + 1) * repetitions),
            warning=warning,
        )
