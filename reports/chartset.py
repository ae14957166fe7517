"""Which charts a page of runs gets, each rendered once: title, note, spec and SVG.

A chart appears only when its data says something: a depth sweep needs two
depths, a batch sweep two batch sizes, a latency plot serving records.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from pdx.reports import charts, figures
from pdx.reports.figures import Namer
from pdx.reports.render import ChartRenderer

# Above this many bars a per-test chart of every run stops being readable:
# the page shows the headline tests per series instead.
MAX_BARS = 48


@dataclass
class Chart:
    name: str
    title: str
    note: str
    spec: dict
    svg: Markup

    def to_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "note": self.note, "vega_lite": self.spec}


def make_chart(renderer: ChartRenderer, name: str, title: str, note: str, spec: dict) -> Chart:
    return Chart(name, title, note, spec, renderer.svg(spec, title))


def charts_for(runs: list[dict], renderer: ChartRenderer, namer: Namer, headline: dict[str, str],
               per_test: bool = True) -> list[Chart]:
    out = []
    bars = figures.run_bars(runs, namer) if per_test else []
    if bars and len(bars) <= MAX_BARS and len(runs) <= len(charts.SHADES):
        out.append(make_chart(renderer, "measured-vs-ceiling", "Measured vs ceiling, per phase",
                         "bars: mean tokens/s with its 95% CI; grey dashed: the ceiling, where stored",
                         charts.phase_bars(bars, "run")))
    elif headline:
        bars = figures.system_bars(runs, namer, headline)
        if bars:
            tests = " and ".join(headline.values())
            out.append(make_chart(renderer, "prefill-vs-decode", f"Prefill and decode: {tests}",
                             "the newest measurement of each; grey dashed: the ceiling, where stored",
                             charts.phase_bars(bars, "system")))
    depth = figures.depth_points(runs, namer)
    if depth:
        out.append(make_chart(renderer, "rate-vs-depth", "Rate vs context depth",
                         "batch 1; depth = tokens already in the KV cache", charts.rate_vs_depth(depth)))
    points, knees = figures.batch_points(runs, namer)
    if points:
        out.append(make_chart(renderer, "decode-vs-batch", "Decode rate vs batch",
                         f"solid: all sequences together; dashed: per sequence; measured knee: the largest batch "
                         f"whose per-sequence rate keeps {figures.KNEE_SHARE:.0%} of batch 1's",
                         charts.batch_sweep(points, knees)))
    latencies = figures.latency_points(runs, namer)
    if latencies:
        out.append(make_chart(renderer, "latency", "Serving latency distributions", "TTFT and ITL per request, ms",
                         charts.latency_distributions(latencies)))
    return out
