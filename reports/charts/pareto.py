"""The Pareto chart of a server-configuration sweep (``serve-bench --server-grid``): one point per
serving test of each of the sweep's runs, per-user tokens/s (a stream's decode rate, mean) across,
and up the aggregate tokens/s (output tokens over the test), then J/token and $ per million tokens
where a meter read the energy. The front (:func:`pdx.domain.serving.pareto.front`) is drawn as a line, its
points named by their settings; every point links to its run.
"""

from __future__ import annotations

from typing import Callable, Iterable

from pdx.reports.charts.specs import SERIES_SCHEME, WIDTH, _spec
from pdx.domain.serving import grid, pareto

# (field, axis title, +1 higher is better / -1 lower is)
AXES = (("aggregate", "aggregate tokens/s", 1), ("j_per_token", "J/token", -1),
        ("cost_per_mtok", "cost per million tokens", -1))
FRONT_COLOUR, OFF_COLOUR = "#2563eb", "#9ca3af"


def sweep_points(runs: Iterable[dict], link: Callable[[dict], str]) -> list[dict]:
    """One record per serving test of each complete run of a sweep (the newest of a combination run
    twice; runs come newest first): its sweep, run, settings and figures."""
    out, seen = [], set()
    for run in runs:
        sweep = grid.sweep_of(run.get("tags"))
        if sweep is None or run.get("status") != "complete":
            continue
        settings = grid.label(grid.settings(run["tags"]))
        if (sweep, run["backend"], settings) in seen:
            continue
        seen.add((sweep, run["backend"], settings))
        tests = [t for t in run.get("tests") or []
                 if t.get("kind") == "serve" and (t.get("stats") or {}).get("completed")]
        for test in tests:
            stats = test["stats"]
            per_user, aggregate = stats.get("per_stream_decode_rate"), stats.get("output_throughput")
            if per_user is None or aggregate is None:
                continue
            energy = stats.get("energy") or {}
            out.append({"sweep": sweep, "run": run["id"], "link": link(run), "backend": run["backend"],
                        "settings": settings, "test": test["name"],
                        "name": settings if len(tests) == 1 else f"{settings} · {test['name']}",
                        "per_user": per_user, "aggregate": aggregate, "j_per_token": energy.get("j_per_token"),
                        "cost_per_mtok": energy.get("cost_per_mtok")})
    return out


def with_fronts(points: list[dict]) -> list[dict]:
    """The points with ``front_<axis>`` set: whether each is on its sweep's front against per-user tokens/s."""
    for field, _, better in AXES:
        for sweep in dict.fromkeys(p["sweep"] for p in points):
            mine = [p for p in points if p["sweep"] == sweep and p[field] is not None]
            on = set(pareto.front([(p["per_user"], p[field]) for p in mine], (1, better)))
            for i, p in enumerate(mine):
                p[f"front_{field}"] = i in on
    return points


def axes_of(points: list[dict]) -> list[tuple[str, str, int]]:
    """The axes the points have figures for (aggregate always; energy where it was read)."""
    return [a for a in AXES if any(p[a[0]] is not None for p in points)]


def pareto_chart(points: list[dict]) -> dict:
    several = len({p["sweep"] for p in points}) > 1
    colour = ({"field": "sweep", "type": "nominal", "title": "sweep", "scale": {"scheme": SERIES_SCHEME}}
              if several else {"value": FRONT_COLOUR})
    x = {"field": "per_user", "type": "quantitative", "title": "per-user tokens/s (a stream's decode rate)"}
    panels = []
    axes = axes_of(points)
    for field, title, better in axes:
        values = [p for p in points if p[field] is not None]
        on = [p for p in values if p.get(f"front_{field}")]
        y = {"field": field, "type": "quantitative", "title": title + ("" if better > 0 else " (lower is better)")}
        panels.append({
            "width": WIDTH // len(axes) - 20 if len(axes) > 1 else WIDTH, "height": 240,
            "layer": [
                {"data": {"values": on}, "mark": {"type": "line", "strokeWidth": 1.5},
                 "encoding": {"x": x, "y": y, "order": {"field": "per_user"}, "detail": {"field": "sweep"},
                              "color": colour}},
                {"data": {"values": values}, "mark": {"type": "point", "filled": True, "size": 60, "cursor": "pointer"},
                 "encoding": {"x": x, "y": y, "href": {"field": "link"},
                              "color": colour if several else {"condition": {"test": f"datum.front_{field}",
                                                                             "value": FRONT_COLOUR},
                                                               "value": OFF_COLOUR},
                              "tooltip": [{"field": "name"}, {"field": "run"}, {"field": "per_user", "format": ".1f"},
                                          {"field": field, "format": ".4g"}]}},
                {"data": {"values": on}, "mark": {"type": "text", "align": "left", "dx": 6, "dy": -6, "fontSize": 10},
                 "encoding": {"x": x, "y": y, "text": {"field": "name"}, "href": {"field": "link"}}},
            ]})
    return _spec({"hconcat": panels}, "Pareto front of a server sweep: per-user against aggregate tokens/s")


def note() -> str:
    return ("each point a serving test of one configuration's run (a link to it); the line and the named "
            "points: the front, where no configuration gives more to one user and more in all (or less energy "
            "or cost per token) at once")
