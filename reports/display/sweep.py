"""The terminal's view of a server-configuration sweep (``serve-bench --server-grid``): every
configuration's per-user and aggregate tokens/s (and J/token where read), the Pareto front marked,
as the report and the site draw it (:mod:`pdx.reports.charts.pareto`)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pdx.reports.charts import pareto


def print_sweep(sweep_id: str, runs: list[dict], console: Console) -> None:
    """The sweep's complete runs (newest first) as a table, fastest per user first."""
    points = pareto.with_fronts(pareto.sweep_points(runs, lambda run: run["id"]))
    if not points:
        return
    energy = any(p["j_per_token"] is not None for p in points)
    table = Table(title=f"sweep {sweep_id}: per user against in all (front: no configuration gives more of both)",
                  title_justify="left")
    for name, right in (("configuration", False), ("backend", False), ("per user t/s", True), ("in all t/s", True),
                        *((("J/token", True),) if energy else ()), ("front", False), ("run", False)):
        table.add_column(name, justify="right" if right else "left")
    for p in sorted(points, key=lambda p: -p["per_user"]):
        table.add_row(escape(p["name"]), escape(p["backend"]), f"{p['per_user']:.1f}", f"{p['aggregate']:.1f}",
                      *((f"{p['j_per_token']:.4g}" if p["j_per_token"] is not None else "-",) if energy else ()),
                      "on the front" if p["front_aggregate"] else "", p["run"][:12])
    console.print(table)
