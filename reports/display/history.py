"""``pdx history`` in the terminal: one line per test (a sparkline of its runs, the latest against the
best), then the steps found, each named by the versions on either side."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console

from pdx.reports.display.text import printable

_BARS = "▁▂▃▄▅▆▇█"
SPARK_POINTS = 40  # the newest points a sparkline shows


def sparkline(values: Sequence[float]) -> str:
    """One bar per value, scaled between the smallest and the largest shown."""
    values = list(values)[-SPARK_POINTS:]
    if not values:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return _BARS[len(_BARS) // 2] * len(values)
    return "".join(_BARS[round((v - low) / (high - low) * (len(_BARS) - 1))] for v in values)


def step_line(step) -> str:
    kind = "regression" if step.regression else "improvement"
    low, high = step.ci95
    return (f"{printable(step.before)} -> {printable(step.after)}: {step.change:+.1%} "
            f"(95% CI {low:+.1%} to {high:+.1%}), {step.level_before:.2f} -> {step.level_after:.2f} t/s, {kind}")


def print_history(result, console: Console) -> None:
    console.print(f"{printable(result.engine)} ({printable(result.backend)}) on {printable(result.hardware)}, "
                  f"model {printable(result.model)}: runs in {result.ordered_by} order, steps beyond "
                  f"{result.factor:g}x", highlight=False, markup=False)
    width = max(len(t.test) for t in result.timelines) if result.timelines else 4
    for timeline in result.timelines:
        latest, best = timeline.latest, timeline.best
        versus = "best" if latest is best else \
            f"{latest.mean / best.mean - 1:+.1%} vs best {best.mean:.2f} ({printable(best.label)})"
        console.print(f"{printable(timeline.test):<{width}}  {sparkline([p.mean for p in timeline.points])}  "
                      f"{len(timeline.points)} runs, latest {latest.mean:.2f} t/s ({printable(latest.label)}), "
                      f"{versus}",
                      highlight=False, markup=False)
        for step in timeline.steps:
            console.print(f"{'':<{width}}  step {step_line(step)}", highlight=False, markup=False)
    if not any(t.steps for t in result.timelines):
        console.print("no step found", highlight=False, markup=False)
