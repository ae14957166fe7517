"""The site's history pages: one per machine and engine (``history/<slug>.html``), each test's runs over
engine versions for every model it ran, each point with its 95% CI and a link to its run page, the steps
found (:mod:`pdx.reports.history`) marked on the chart and listed; ``history.html`` lists the pages.

A timeline needs two runs or more of one model and test: a machine and engine with none has no page.
The points are every run of a site published from a registry; a site built from a results folder
(the hub) has the runs it keeps whole (those its pages show), so its timelines may have gaps."""

from __future__ import annotations

from pdx.reports import groups, labels
from pdx.reports.charts import specs
from pdx.reports.charts.chartset import make_chart
from pdx.reports.history import History, build_history

FOLDER = "history"


def _chart_data(timeline) -> tuple[list[dict], list[dict]]:
    points = [{"label": p.label, "mean": p.mean, "low": None if p.ci95 is None else p.mean - p.ci95,
               "high": None if p.ci95 is None else p.mean + p.ci95} for p in timeline.points]
    steps = [{"after": s.after, "kind": "regression" if s.regression else "improvement"} for s in timeline.steps]
    return points, steps


def histories(runs: list[dict]) -> dict[str, tuple[dict, list[History]]]:
    """Page slug -> (a run of the page, the history of each model) for every machine and backend with a
    timeline of two runs or more."""
    by_setup: dict[tuple, list[dict]] = {}
    for run in runs:
        key = (groups.hardware_key(run), run["backend"], groups.model_key(run))
        by_setup.setdefault(key, []).append(run)
    pages: dict[str, tuple[dict, list[History]]] = {}
    for setup in by_setup.values():
        found = build_history(setup) if len(setup) > 1 and any(r["status"] != "failed" for r in setup) else None
        if found is None or not any(len(t.points) > 1 for t in found.timelines):
            continue
        pages.setdefault(groups.engine_slug(setup[0]), (setup[0], []))[1].append(found)
    return pages


def build(builder) -> None:
    """Write the history pages through ``builder`` (a :class:`pdx.reports.site.builder.SiteBuilder`)."""
    listed = []
    # Every run a registry's site was given (its run pages); a results folder's site, the runs it keeps whole.
    for slug, (run, found) in histories(list(builder.run_pages) or builder.runs).items():
        title = f"{run['engine']['name']} ({run['backend']}) on {labels.hardware_label(run)}"
        sections: list[dict] = []
        for history in found:
            for timeline in history.timelines:
                points, steps = _chart_data(timeline)
                chart = make_chart(builder.renderer, "history", f"{history.model} · {timeline.test}",
                                   "each point a run's mean rate with its 95% CI; dashed: a step found",
                                   specs.history_line(points, steps))
                sections.append({"model": history.model, "test": timeline.test, "ordered_by": history.ordered_by,
                                 "timeline": timeline, "chart": chart})
        data = {"hardware": run["hardware"], "backend": run["backend"], "engine": run["engine"]["name"],
                "histories": [h.to_dict() for h in found], "charts": [s["chart"].to_dict() for s in sections]}
        path = f"{FOLDER}/{slug}.html"
        builder.page(path, "history.html", title, data, sections=sections, factor=found[0].factor)
        listed.append({"title": title, "page": path, "timelines": len(sections),
                       "steps": sum(len(s["timeline"].steps) for s in sections)})
    builder.page("history.html", "history_index.html", "Engine history", {"pages": listed}, pages=listed)
