"""``pdx report``: one self-contained HTML file comparing the selected runs.

Everything is inside the file: the stylesheet, the sort script, every chart
as inline SVG. It opens from ``file://`` with no network.
"""

from __future__ import annotations

import os
from pathlib import Path

from pdx.contract.errors import PdxError
from pdx.reports import comparison, groups, labels, templating, views
from pdx.reports.site import pages
from pdx.reports.charts import specs
from pdx.reports.charts.chartset import charts_for, make_chart
from pdx.reports.charts.render import ChartRenderer
from pdx.reports.rows import keeping_rows
from pdx.reports.site.leaderboard import board_note, leaderboard
from pdx.reports.site.writer import write_file

# Past this many runs, charts name series by system instead of by run, and the side-by-side
# table of every test gives way to the leaderboard of configurations.
RUN_SERIES_LIMIT = 8
MATRIX_LIMIT = 12
# One file holds every run in full; past this many, a site is the better form.
REPORT_LIMIT = 500


def render_report(runs: list[dict], title: str = "pdx report", selection: str = "",
                  templates: str | os.PathLike | None = None, renderer: ChartRenderer | None = None) -> str:
    with keeping_rows():
        return _render_report(runs, title, selection, templates, renderer)


def _render_report(runs: list[dict], title: str, selection: str, templates: str | os.PathLike | None,
                   renderer: ChartRenderer | None) -> str:
    if len(runs) > REPORT_LIMIT:
        raise PdxError(f"{len(runs)} runs are too many for one file (at most {REPORT_LIMIT})",
                       "narrow the selection with --where, or build a site with `pdx publish`")
    renderer = renderer or ChartRenderer()
    headline = groups.headline_tests(runs)
    namer = labels.run_label if len(runs) <= RUN_SERIES_LIMIT else labels.system_label
    charts = charts_for(runs, renderer, namer, headline)
    configs = list(groups.group_by(runs, groups.config_key).values())
    board = leaderboard(configs, headline, pages.ReportLinks())
    env = templating.environment(templates)
    return env.get_template("report.html").render(
        site=pages.site_info(title, runs, inline=True),
        page={"title": title, "root": "", "json": None},
        links=pages.ReportLinks(),
        runs=runs,
        selection=selection,
        counts={"hardware": len({groups.hardware_key(r) for r in runs}),
                "models": len({groups.model_key(r) for r in runs}),
                "backends": len({r["backend"] for r in runs})},
        matrix=views.matrix(runs) if len(runs) <= MATRIX_LIMIT else None,
        serving=views.serving_matrix(runs) if len(runs) <= MATRIX_LIMIT else None,
        board=board,
        board_note=board_note(configs, board),
        headline=headline,
        charts=charts,
        has_ceiling=views.has_ceilings(runs),
    )


def write_report(runs: list[dict], output: str | os.PathLike, **options) -> Path:
    path = Path(output)
    write_file(path, render_report(runs, **options))
    return path


def render_comparison(base: dict, new: dict, lines: list[comparison.Line], title: str | None = None,
                      templates: str | os.PathLike | None = None) -> str:
    """``pdx compare A B --html``: the comparison table and chart, then both runs in full."""
    renderer = ChartRenderer()
    data = comparison.change_chart_data(lines)
    charts = [make_chart(renderer, "change", "New run vs baseline, per test",
                         "rate change; colour: the verdict of Mann-Whitney U on the raw samples",
                         specs.change_bars(data))] if data else []
    title = title or f"{labels.run_label(new)} vs {labels.run_label(base)}"
    env = templating.environment(templates)
    return env.get_template("compare.html").render(
        site=pages.site_info(title, [base, new], inline=True),
        page={"title": title, "root": "", "json": None},
        links=pages.ReportLinks(), base=base, new=new, lines=lines, differences=comparison.differences(base, new),
        runs=[new, base], charts=charts, standalone=True,
    )
