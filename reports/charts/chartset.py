"""Which charts a page of runs gets, each rendered once: title, note, spec and SVG.

Charts come from chart makers that plugins register through the
``pdx_register_charts`` hook; pdx's own (below) are registered the same way.
A chart appears only when its data says something: a depth sweep needs two
depths, a batch sweep two batch sizes, a latency plot serving records.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Mapping

from markupsafe import Markup

from pdx.contract.chart import SLUG, ChartMaker, ChartSpec, check_maker  # noqa: F401 (plugins import them here)
from pdx.contract.errors import PdxError
from pdx.base.plugin_manager import CHARTS, extensions
from pdx.reports import labels
from pdx.reports.charts import figures
from pdx.reports.charts import serving as serving_charts
from pdx.reports.charts import specs as charts
from pdx.reports.charts.figures import Namer
from pdx.reports.charts.render import ChartRenderer

# Above this many bars a per-test chart of every run stops being readable:
# the page shows the headline tests per series instead.
MAX_BARS = 48


# A line chart with more series than this is a tangle; the fastest are kept, and the note says so.
MAX_SERIES = 12


@dataclass
class Chart:
    """A chart requested from the renderer; its SVG exists once the renderer has flushed."""

    name: str
    title: str
    note: str
    spec: dict
    renderer: ChartRenderer
    key: str

    @property
    def svg(self) -> Markup:
        return self.renderer.svg(self.key)

    def to_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "note": self.note, "vega_lite": self.spec}


def make_chart(renderer: ChartRenderer, name: str, title: str, note: str, spec: dict) -> Chart:
    return Chart(name, title, note, spec, renderer, renderer.request(spec, title))


def cap_series(records: list[dict], value: str, note: str, limit: int = MAX_SERIES,
               key: str = "series") -> tuple[list[dict], str]:
    """Keep the ``limit`` series that reach the highest ``value``; say how many were left out."""
    best: dict[str, float] = {}
    for r in records:
        best[r[key]] = max(best.get(r[key], 0.0), r[value] or 0.0)
    if len(best) <= limit:
        return records, note
    kept = set(sorted(best, key=best.get, reverse=True)[:limit])
    return [r for r in records if r[key] in kept], f"{note}; the fastest {limit} of {len(best)} shown"


@dataclass(frozen=True)
class ChartView:
    """What a chart maker is given: the page's runs (as ``pdx show --json`` prints them; on a site's
    machine and model pages, the runs that hold its newest and best figures), how the page names a
    run in a legend, the page's headline tests (phase -> test name), and whether the
    page has room for a bar per test of every run."""

    runs: list[dict]
    namer: Namer
    headline: dict[str, str]
    per_test: bool = True

    @functools.cached_property
    def latest(self) -> figures.Latest:
        """The newest row of each (series, test, phase): what several charts plot, found once a page."""
        return figures.latest_rows(self.runs, self.namer)


def chart_makers() -> list[tuple[str, ChartMaker]]:
    """(plugin name, maker) of every chart maker, pdx's own first, in the order pages show them."""
    return [(record.name, make) for record, make in extensions(CHARTS)]


def _checked(spec: object, plugin: str) -> ChartSpec:
    """A maker's answer crosses a boundary: a wrong one is the plugin's mistake, reported, never a crash."""
    if isinstance(spec, Mapping):
        spec = ChartSpec(**{k: spec.get(k) for k in ("name", "title", "note", "vega_lite")})
    if not isinstance(spec, ChartSpec):
        raise PdxError(f"plugin {plugin}'s chart maker returned {type(spec).__name__}, not a ChartSpec")
    for field in ("name", "title", "note"):
        if not isinstance(getattr(spec, field), str):
            raise PdxError(f"plugin {plugin}'s chart has no text {field}")
    if not SLUG.fullmatch(spec.name):
        raise PdxError(f"plugin {plugin}'s chart name {spec.name!r} is not a slug (letters, digits, -)")
    if not isinstance(spec.vega_lite, dict):
        raise PdxError(f"plugin {plugin}'s chart {spec.name} has no Vega-Lite spec (a dict)")
    return spec


def charts_for(runs: list[dict], renderer: ChartRenderer, namer: Namer, headline: dict[str, str],
               per_test: bool = True) -> list[Chart]:
    # One series per model, machine and engine, named so that a legend says which (labels.series_namer).
    view = ChartView(runs, labels.series_namer(runs, namer), headline, per_test)
    out: list[Chart] = []
    for plugin, make in chart_makers():
        try:
            answer = make(view)
            if answer is None:
                continue
            spec = _checked(answer, plugin)
        except Exception as exc:  # one plugin's broken chart costs that chart, never the page
            warn_once(f"pdx: warning: plugin {plugin}: a chart maker failed ({type(exc).__name__}: {exc}); "
                      "the page is built without it")
            continue
        if any(c.name == spec.name for c in out):
            warn_once(f"pdx: warning: plugin {plugin}: a chart named {spec.name} is already on the page; "
                      "this one is left out")
            continue
        out.append(make_chart(renderer, spec.name, spec.title, spec.note, spec.vega_lite))
    return out


def warn_once(message: str, _said: set[str] = set()) -> None:
    if message not in _said:
        _said.add(message)
        print(message, file=sys.stderr)


# pdx's own charts, registered through pdx_register_charts like any plugin's (pdx.reports.charts.builtin).

def phase_chart(view: ChartView) -> ChartSpec | None:
    runs, namer = view.runs, view.namer
    bars = figures.run_bars(runs, namer) if view.per_test else []
    if bars and len(bars) <= MAX_BARS and len(runs) <= charts.SERIES_COLOURS:
        return ChartSpec("measured-vs-ceiling", "Measured vs ceiling, per phase",
                         "bars: mean tokens/s with its 95% CI; grey dashed: the ceiling, where stored",
                         charts.phase_bars(bars, "run"))
    if not view.headline:
        return None
    bars, note = cap_series(figures.system_bars(runs, namer, view.headline, view.latest), "rate",
                            "the newest measurement of each; grey dashed: the ceiling, where stored",
                            limit=MAX_BARS // 2, key="label")
    if not bars:
        return None
    tests = " and ".join(view.headline.values())
    return ChartSpec("prefill-vs-decode", f"Prefill and decode: {tests}", note, charts.phase_bars(bars, "system"))


def depth_chart(view: ChartView) -> ChartSpec | None:
    depth, note = cap_series(figures.depth_points(view.runs, view.namer, view.latest), "rate",
                             "batch 1; depth = tokens already in the KV cache")
    return ChartSpec("rate-vs-depth", "Rate vs context depth", note, charts.rate_vs_depth(depth)) if depth else None


def batch_chart(view: ChartView) -> ChartSpec | None:
    points, knees = figures.batch_points(view.runs, view.namer, view.latest)
    points, note = cap_series(points, "aggregate",
                              f"solid: all sequences together; dashed: per sequence; measured knee: the largest "
                              f"batch whose per-sequence rate keeps {figures.KNEE_SHARE:.0%} of batch 1's")
    if not points:
        return None
    shown = {p["series"] for p in points}
    reach = 2 * max(p["batch"] for p in points)  # a knee far past the sweep would squash it flat
    beyond = sorted({round(k["batch"]) for k in knees if k["series"] in shown and k["batch"] > reach})
    if beyond:
        note += f"; predicted knee beyond the sweep: batch {', '.join(map(str, beyond))}"
    knees = [k for k in knees if k["series"] in shown and k["batch"] <= reach]
    return ChartSpec("decode-vs-batch", "Decode rate vs batch", note, charts.batch_sweep(points, knees))


def latency_chart(view: ChartView) -> ChartSpec | None:
    latencies = figures.latency_points(view.runs, view.namer)
    if not latencies:
        return None
    return ChartSpec("latency", "Serving latency distributions",
                     "per request, ms: line min to max, box the middle half, tick the median, dot p99",
                     charts.latency_distributions(latencies))


def capacity_chart(view: ChartView) -> ChartSpec | None:
    capacity, marks = serving_charts.capacity_points(view.runs, view.namer)
    if not capacity:
        return None
    return ChartSpec("capacity", "Capacity under the SLO",
                     "each point measured (cross: the SLO broke); red dashed: the SLO; green: the capacity",
                     serving_charts.capacity_curve(capacity, marks))


def timeline_chart(view: ChartView) -> ChartSpec | None:
    timeline, left_out = serving_charts.timeline_points(view.runs, view.namer)
    if not timeline:
        return None
    return ChartSpec("requests-timeline", "Requests over time", serving_charts.timeline_note(left_out),
                     serving_charts.requests_timeline(timeline))


BUILTIN = (phase_chart, depth_chart, batch_chart, latency_chart, capacity_chart, timeline_chart)
