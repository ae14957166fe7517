"""The conditions each test ran under, as ``pdx show`` prints them."""

from __future__ import annotations

from rich.console import Console

from pdx.reports.figures import condition_text

__all__ = ["condition_text", "print_conditions"]


def print_conditions(run: dict, console: Console) -> None:
    recorded = [t for t in run["tests"] if t.get("conditions")]
    if not recorded:
        return
    console.print("[bold]conditions[/bold]", highlight=False)
    for test in recorded:
        console.print(f"  {test['name']}: {condition_text(test['conditions'])}", highlight=False, markup=False)
