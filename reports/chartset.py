"""Which charts a page of runs gets, each rendered once: title, note, spec and SVG.

A chart appears only when its data says something: a depth sweep needs two
depths, a batch sweep two batch sizes, a latency plot serving records.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from pdx.reports import charts, figures, serving_charts
from pdx.reports.figures import Namer
from pdx.reports.render import ChartRenderer

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


def charts_for(runs: list[dict], renderer: ChartRenderer, namer: Namer, headline: dict[str, str],
               per_test: bool = True) -> list[Chart]:
    out = []
    bars = figures.run_bars(runs, namer) if per_test else []
    if bars and len(bars) <= MAX_BARS and len(runs) <= len(charts.SHADES):
        out.append(make_chart(renderer, "measured-vs-ceiling", "Measured vs ceiling, per phase",
                         "bars: mean tokens/s with its 95% CI; grey dashed: the ceiling, where stored",
                         charts.phase_bars(bars, "run")))
    elif headline:
        bars, note = cap_series(figures.system_bars(runs, namer, headline), "rate",
                                "the newest measurement of each; grey dashed: the ceiling, where stored",
                                limit=MAX_BARS // 2, key="label")
        if bars:
            tests = " and ".join(headline.values())
            out.append(make_chart(renderer, "prefill-vs-decode", f"Prefill and decode: {tests}", note,
                                  charts.phase_bars(bars, "system")))
    depth, note = cap_series(figures.depth_points(runs, namer), "rate",
                             "batch 1; depth = tokens already in the KV cache")
    if depth:
        out.append(make_chart(renderer, "rate-vs-depth", "Rate vs context depth", note, charts.rate_vs_depth(depth)))
    points, knees = figures.batch_points(runs, namer)
    points, note = cap_series(points, "aggregate",
                              f"solid: all sequences together; dashed: per sequence; measured knee: the largest "
                              f"batch whose per-sequence rate keeps {figures.KNEE_SHARE:.0%} of batch 1's")
    if points:
        shown = {p["series"] for p in points}
        reach = 2 * max(p["batch"] for p in points)  # a knee far past the sweep would squash it flat
        beyond = sorted({round(k["batch"]) for k in knees if k["series"] in shown and k["batch"] > reach})
        if beyond:
            note += f"; predicted knee beyond the sweep: batch {', '.join(map(str, beyond))}"
        knees = [k for k in knees if k["series"] in shown and k["batch"] <= reach]
        out.append(make_chart(renderer, "decode-vs-batch", "Decode rate vs batch", note,
                              charts.batch_sweep(points, knees)))
    latencies = figures.latency_points(runs, namer)
    if latencies:
        out.append(make_chart(renderer, "latency", "Serving latency distributions",
                              "per request, ms: line min to max, box the middle half, tick the median, dot p99",
                              charts.latency_distributions(latencies)))
    capacity, marks = serving_charts.capacity_points(runs, namer)
    if capacity:
        out.append(make_chart(renderer, "capacity", "Capacity under the SLO",
                              "each point measured (cross: the SLO broke); red dashed: the SLO; green: the capacity",
                              serving_charts.capacity_curve(capacity, marks)))
    timeline, left_out = serving_charts.timeline_points(runs, namer)
    if timeline:
        note = "per request: grey the wait for a slot (scheduled to sent), blue to the first token, orange to the last"
        if left_out:
            note += f"; the first {serving_charts.MAX_TIMELINE_REQUESTS} of each test shown ({left_out} left out)"
        out.append(make_chart(renderer, "requests-timeline", "Requests over time", note,
                              serving_charts.requests_timeline(timeline)))
    return out
