"""The site's sweep pages: one per server-configuration sweep (``serve-bench --server-grid``) at
``sweeps/<id>.html``, its Pareto chart (:mod:`pdx.reports.charts.pareto`) over every run of the sweep
with each point linked to its run page, and a table of the configurations, the front's marked;
``sweeps.html`` lists them. A sweep with fewer than two points measured has no page."""

from __future__ import annotations

from pdx.reports.charts import pareto as pareto_charts
from pdx.reports.charts.chartset import make_chart
from pdx.domain.serving import grid

FOLDER = "sweeps"


def sweeps(runs: list[dict]) -> dict[str, list[dict]]:
    """Sweep id -> its points (with their fronts), for every sweep of two points or more."""
    points = pareto_charts.sweep_points(runs, lambda run: f"../runs/{run['id']}.html")
    by_sweep: dict[str, list[dict]] = {}
    for p in points:
        by_sweep.setdefault(p["sweep"], []).append(p)
    return {s: pareto_charts.with_fronts(found) for s, found in by_sweep.items() if len(found) > 1}


def left_out(runs: list[dict], sweep: str, points: list[dict]) -> list[dict]:
    """The sweep's runs that give no point, and why (a failed run, a test with no per-stream rate)."""
    drawn = {p["run"] for p in points}
    drawn_settings = {(p["backend"], p["settings"]) for p in points}
    out = []
    for run in runs:
        if grid.sweep_of(run.get("tags")) == sweep and run["id"] not in drawn:
            settings = grid.label(grid.settings(run["tags"]))
            if run["status"] != "complete":
                why = f"the run is {run['status']}"
            elif (run["backend"], settings) in drawn_settings:
                why = "a newer run of the same settings is drawn"
            else:
                why = "no serving test with both rates (a stream's decode rate needs two token arrivals)"
            out.append({"run": run["id"], "name": settings, "why": why})
    return out


def build(builder) -> None:
    """Write the sweep pages through ``builder`` (a :class:`pdx.reports.site.builder.SiteBuilder`)."""
    listed = []
    # Every run a registry's site was given (its run pages); a results folder's site, the runs it keeps whole.
    runs = list(builder.run_pages) or builder.runs
    for sweep, points in sweeps(runs).items():
        chart = make_chart(builder.renderer, "sweep-pareto", "Per-user against aggregate tokens/s",
                           pareto_charts.note(), pareto_charts.pareto_chart(points))
        axes = [a[0] for a in pareto_charts.axes_of(points)]
        missing = left_out(runs, sweep, points)
        data = {"sweep": sweep, "points": points, "axes": axes, "left_out": missing, "charts": [chart.to_dict()]}
        path = f"{FOLDER}/{sweep}.html"
        title = f"Sweep {sweep}"
        builder.page(path, "sweep.html", title, data, points=points, chart=chart, axes=axes, missing=missing)
        listed.append({"title": title, "page": path, "sweep": sweep, "points": len(points),
                       "runs": len({p["run"] for p in points}), "front": sum(p["front_aggregate"] for p in points),
                       "backends": sorted({p["backend"] for p in points})})
    builder.page("sweeps.html", "sweeps.html", "Server sweeps", {"sweeps": listed}, sweeps=listed)
