"""``pdx report``: one self-contained HTML file comparing the selected runs.

Everything is inside the file: the stylesheet, the sort script, every chart
as inline SVG. It opens from ``file://`` with no network.
"""

from __future__ import annotations

import os
from pathlib import Path

from pdx.reports import groups, labels, pages, views
from pdx.reports.chartset import charts_for
from pdx.reports.render import ChartRenderer
from pdx.reports.writer import write_file

# Past this many runs, charts name series by system instead of by run.
RUN_SERIES_LIMIT = 8


def render_report(runs: list[dict], title: str = "pdx report", selection: str = "",
                  templates: str | os.PathLike | None = None, renderer: ChartRenderer | None = None) -> str:
    renderer = renderer or ChartRenderer()
    headline = groups.headline_tests(runs)
    namer = labels.run_label if len(runs) <= RUN_SERIES_LIMIT else labels.system_label
    charts = charts_for(runs, renderer, namer, headline)
    env = pages.make_environment(templates)
    return env.get_template("report.html").render(
        site=pages.site_info(title, runs, inline=True),
        page={"title": title, "root": "", "json": None},
        links=pages.ReportLinks(),
        runs=runs,
        selection=selection,
        counts={"hardware": len({groups.hardware_key(r) for r in runs}),
                "models": len({groups.model_key(r) for r in runs}),
                "backends": len({r["backend"] for r in runs})},
        matrix=views.matrix(runs),
        charts=charts,
        has_ceiling=views.has_ceilings(runs),
    )


def write_report(runs: list[dict], output: str | os.PathLike, **options) -> Path:
    path = Path(output)
    write_file(path, render_report(runs, **options))
    return path
