"""A run's own charts, drawn straight to SVG: its rates against their ceilings per phase, its depth
curve, its batch curve and a serving run's latency distributions, where the run has them.

A site has a page per run, and a community's site 100,000 of them: at a tenth of a second a chart
(vl-convert's text layout), Vega-Lite would cost a site hours. These few chart forms are drawn here
in a millisecond each, with the same data (:mod:`pdx.reports.charts.figures`), colours, fonts, per-panel
scales (:func:`pdx.reports.charts.specs.rate_scale`) and knee labels (:func:`pdx.reports.charts.specs.knee_rows`)
as the Vega-Lite charts of the site's other pages, every label placed where it meets no other.
Stored text reaches the SVG only escaped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from markupsafe import Markup, escape

from pdx.reports.charts import figures
from pdx.reports.charts import serving as serving_charts
from pdx.reports.charts import specs as charts
from pdx.reports.charts.specs import CEILING_COLOUR, PHASE_COLOURS, chart_text, text_width
from pdx.reports.rows import DECODE, PHASES, PREFILL

WIDTH = 640
FONT = 11
TITLE = 12
PLOT_HEIGHT = 160
BAR = 14  # a bar's height; rows are BAR + 6 apart
MUTED = "#666"
# tableau10, as the Vega-Lite charts colour their series
SERIES_COLOURS = ["#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6",
                  "#9d755d", "#bab0ac"]


@dataclass(frozen=True)
class RunChart:
    """A chart of one run's page, as the ``chart`` macro shows it."""

    name: str
    title: str
    note: str
    svg: Markup


def _t(text: str) -> str:
    return str(escape(chart_text(str(text))))


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def tick_label(value: float) -> str:
    """1,500 -> 1.5k, 20,000 -> 20k, 0.25 -> 0.25: an axis's numbers, short."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round ticks from 0 up to ``top``."""
    if top <= 0:
        return [0.0]
    raw = top / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if step * m >= raw)
    return [i * step for i in range(int(top / step + 1e-9) + 1)]


def _text(x: float, y: float, text: str, size: float = FONT, anchor: str = "start", colour: str | None = None,
          weight: str | None = None, baseline: str = "middle") -> str:
    fill = f' fill="{colour}"' if colour else ""
    bold = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{_num(x)}" y="{_num(y)}" font-size="{size}" text-anchor="{anchor}" '
            f'dominant-baseline="{baseline}"{fill}{bold}>{_t(text)}</text>')


def _svg(width: float, height: float, label: str, body: list[str]) -> Markup:
    return Markup(f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" '
                  f'height="{_num(height)}" viewBox="0 0 {_num(width)} {_num(height)}" role="img" '
                  f'aria-label="{_t(label)}" font-family="Arial">' + "".join(body) + "</svg>")


def _x_axis(body: list[str], left: float, width: float, y: float, ticks: list[tuple[float, str]], title: str) -> float:
    """Ticks and their labels below a plot (labels that would meet the one before are left out);
    returns the y below the axis's title."""
    body.append(f'<line x1="{_num(left)}" y1="{_num(y)}" x2="{_num(left + width)}" y2="{_num(y)}" stroke="#888"/>')
    last = -math.inf
    for at, label in ticks:
        x = left + at
        body.append(f'<line x1="{_num(x)}" y1="{_num(y)}" x2="{_num(x)}" y2="{_num(y + 4)}" stroke="#888"/>')
        half = text_width(label, FONT) / 2
        if x - half > last + 4 and x + half <= left + width + 12:
            body.append(_text(x, y + 12, label, anchor="middle", colour=MUTED))
            last = x + half
    body.append(_text(left + width / 2, y + 28, title, anchor="middle", colour=MUTED))
    return y + 38


def _rate_ticks(scale: dict, width: float) -> list[tuple[float, str]]:
    """(px from the plot's left, label) of a rate axis as :func:`pdx.reports.charts.specs.rate_scale` fits it."""
    lo, hi = scale["domain"]
    if scale.get("type") == "log":
        first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        return [(width * (p - math.log10(lo)) / (math.log10(hi) - math.log10(lo)), tick_label(10 ** p))
                for p in range(first, last + 1) if lo <= 10 ** p <= hi]
    return [(width * t / hi, tick_label(t)) for t in nice_ticks(hi) if t <= hi]


def _position(scale: dict, width: float):
    lo, hi = scale["domain"]
    if scale.get("type") == "log":
        span = math.log10(hi) - math.log10(lo)
        return lambda v: width * (math.log10(min(max(v, lo), hi)) - math.log10(lo)) / span
    return lambda v: width * min(max(v, 0.0), hi) / hi


def phase_chart(run: dict) -> RunChart | None:
    """Each measured phase of each test as a bar, its 95% CI, its ceiling (grey, dashed) and the
    fraction reached; a panel per phase, each with its own scale."""
    bars = figures.run_bars([run])
    if not bars:
        return None
    label_width = max(text_width(b["label"], FONT) for b in bars) + 10
    plot = WIDTH - label_width - 10
    body: list[str] = []
    y = 0.0
    for phase in PHASES:
        values = [b for b in bars if b["phase"] == phase]
        if not values:
            continue
        scale, axis, _ = charts.rate_scale(values, plot)
        scale = scale or {"domain": [0, 1.0]}  # no rate above 0 (a serving test that made no tokens): bars at 0
        at = _position(scale, plot)
        body.append(_text(0, y + 9, phase, size=TITLE, colour=PHASE_COLOURS[phase], weight="bold"))
        y += 22
        top = y
        for v in values:
            mid = y + BAR / 2
            body.append(_text(label_width - 8, mid, v["label"], anchor="end"))
            if v.get("ceiling"):
                body.append(f'<rect x="{_num(label_width)}" y="{_num(y)}" width="{_num(at(v["ceiling"]))}" '
                            f'height="{BAR}" fill="{CEILING_COLOUR}" fill-opacity="0.22" stroke="{CEILING_COLOUR}" '
                            f'stroke-dasharray="4 2"><title>ceiling {_t(tick_label(v["ceiling"]))} tokens/s</title>'
                            '</rect>')
            body.append(f'<rect x="{_num(label_width)}" y="{_num(y + 2)}" width="{_num(max(at(v["rate"]), 0.5))}" '
                        f'height="{BAR - 4}" fill="{PHASE_COLOURS[phase]}"/>')
            if v.get("lo") is not None:
                body.append(f'<line x1="{_num(label_width + at(v["lo"]))}" y1="{_num(mid)}" '
                            f'x2="{_num(label_width + at(v["hi"]))}" y2="{_num(mid)}" stroke="#777"/>')
            if v.get("note"):
                end = max(v["rate"], v.get("ceiling") or 0.0, v.get("hi") or 0.0)
                body.append(_text(label_width + at(end) + 4, mid, v["note"], size=charts.NOTE_SIZE, colour=MUTED))
            y += BAR + 6
        body.append(f'<line x1="{_num(label_width)}" y1="{_num(top)}" x2="{_num(label_width)}" y2="{_num(y)}" '
                    f'stroke="#888"/>')
        y = _x_axis(body, label_width, plot, y, _rate_ticks(scale, plot), axis["title"]) + 8
    return RunChart("measured-vs-ceiling", "Measured vs ceiling, per phase",
                    "bars: mean tokens/s with its 95% CI; grey dashed: the ceiling, where stored; each phase on "
                    "its own scale", _svg(WIDTH, y, "measured rate vs ceiling by test", body))


def _lines_panel(body: list[str], left: float, top: float, width: float, series: dict[str, list[tuple[float, float]]],
                 colours: dict[str, str], x_at, x_ticks: list[tuple[float, str]], x_title: str,
                 dashed: dict[str, list[tuple[float, float]]] | None = None) -> tuple[float, float]:
    """Lines of (x, rate) per series on a rate axis from 0; returns (the plot's top y, the y below it)."""
    values = [r for points in [*series.values(), *(dashed or {}).values()] for _, r in points]
    hi = max(values) * 1.05 if values and max(values) > 0 else 1.0
    ticks = nice_ticks(hi, 4)
    y_at = lambda r: top + PLOT_HEIGHT * (1 - r / hi)  # noqa: E731
    for t in ticks:
        body.append(f'<line x1="{_num(left)}" y1="{_num(y_at(t))}" x2="{_num(left + width)}" y2="{_num(y_at(t))}" '
                    f'stroke="#d8dee4" stroke-opacity="0.6"/>')
        body.append(_text(left - 6, y_at(t), tick_label(t), anchor="end", colour=MUTED))
    for style, group in (("", series), (' stroke-dasharray="5 3"', dashed or {})):
        for name, points in group.items():
            path = " ".join(f"{_num(left + x_at(x))},{_num(y_at(r))}" for x, r in points)
            body.append(f'<polyline points="{path}" fill="none" stroke="{colours[name]}" stroke-width="2"{style}/>')
            body.extend(f'<circle cx="{_num(left + x_at(x))}" cy="{_num(y_at(r))}" r="2.5" fill="{colours[name]}"/>'
                        for x, r in points)
    bottom = _x_axis(body, left, width, top + PLOT_HEIGHT, x_ticks, x_title)
    return top, bottom


def _legend(body: list[str], y: float, entries: list[tuple[str, str, bool]]) -> float:
    """One entry a line (colour, name, dashed); returns the y below."""
    for colour, name, dashed in entries:
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        body.append(f'<line x1="0" y1="{_num(y)}" x2="18" y2="{_num(y)}" stroke="{colour}" stroke-width="2"{dash}/>')
        body.append(_text(24, y, name))
        y += 16
    return y


def _axis_left(labels: list[str]) -> float:
    return max(text_width(label, FONT) for label in labels) + 10


def depth_chart(run: dict) -> RunChart | None:
    """Rate against the tokens already in the KV cache, per phase and test (batch 1)."""
    points = figures.depth_points([run], lambda r: "")
    if not points:
        return None
    body: list[str] = []
    y = 0.0
    for phase in (PREFILL, DECODE):
        mine = [p for p in points if p["phase"] == phase]
        if not mine:
            continue
        series: dict[str, list] = {}
        for p in mine:
            series.setdefault(p["series"].lstrip(" ·") or p["phase"], []).append((p["depth"], p["rate"]))
        colours = {name: SERIES_COLOURS[i % len(SERIES_COLOURS)] for i, name in enumerate(series)}
        if len(series) == 1:
            colours = {name: PHASE_COLOURS[phase] for name in series}
        depths = sorted({d for points_ in series.values() for d, _ in points_})
        top_depth = max(depths) or 1
        left = _axis_left([tick_label(r) for pts in series.values() for _, r in pts] + ["0000"])
        width = WIDTH - left - 20
        x_at = lambda d: width * d / top_depth  # noqa: E731
        body.append(_text(0, y + 9, phase, size=TITLE, colour=PHASE_COLOURS[phase], weight="bold"))
        _, y = _lines_panel(body, left, y + 24, width, series, colours, x_at,
                            [(x_at(t), tick_label(t)) for t in nice_ticks(top_depth)], "context depth (tokens)")
        if len(series) > 1:  # one line is the panel's phase, named in its title
            y = _legend(body, y, [(colours[name], name, False) for name in series])
        y += 8
    return RunChart("rate-vs-depth", "Rate vs context depth", "batch 1; depth = tokens already in the KV cache",
                    _svg(WIDTH, y, "rate vs context depth", body))


def batch_chart(run: dict) -> RunChart | None:
    """Decode rate against batch, all sequences together (solid) and per sequence (dashed), with the
    measured and the predicted knee."""
    points, knees = figures.batch_points([run], lambda r: "")
    if not points:
        return None
    name_of = lambda label: label.lstrip(" ·") or DECODE  # noqa: E731  (a run's one sweep: "decode")
    points = [{**p, "series": name_of(p["series"])} for p in points]
    knees = [{**k, "series": name_of(k["series"])} for k in knees]
    series: dict[str, list] = {}
    per_sequence: dict[str, list] = {}
    for p in points:
        series.setdefault(p["series"], []).append((p["batch"], p["aggregate"]))
        per_sequence.setdefault(p["series"], []).append((p["batch"], p["per_sequence"]))
    names = list(series)
    colours = {name: PHASE_COLOURS[DECODE] if len(names) == 1 else SERIES_COLOURS[i % len(SERIES_COLOURS)]
               for i, name in enumerate(names)}
    batches = sorted({p["batch"] for p in points})
    reach = 2 * batches[-1]  # a knee far past the sweep would squash the curve flat
    beyond = sorted({k["batch"] for k in knees if k["batch"] > reach})
    knees = [k for k in knees if k["batch"] <= reach]
    span = sorted({*batches, *(k["batch"] for k in knees)})
    lo, hi = math.log2(span[0]), math.log2(span[-1])
    left = _axis_left([tick_label(v) for pts in [*series.values(), *per_sequence.values()] for _, v in pts] + ["0000"])
    width = WIDTH - left - 20
    x_at = lambda b: width * (math.log2(b) - lo) / (hi - lo) if hi > lo else width / 2  # noqa: E731
    body: list[str] = []
    placed = charts.knee_rows([{**k, "label": k["kind"] if len(names) == 1 else f"{k['kind']}: {k['series']}"}
                               for k in knees], span, width)
    rows = 1 + max((k["row"] for k in placed), default=-1)
    top = 4 + rows * charts.KNEE_ROW  # the knee labels' rows sit above the plot
    _, y = _lines_panel(body, left, top, width, series, colours, x_at, [(x_at(b), f"{b:g}") for b in batches],
                        "batch (sequences)", dashed=per_sequence)
    for k in placed:
        x = left + x_at(k["batch"])
        dash = ' stroke-dasharray="2 2"' if k["kind"] == "predicted knee" else ""
        body.append(f'<line x1="{_num(x)}" y1="{_num(4 + k["row"] * charts.KNEE_ROW)}" x2="{_num(x)}" '
                    f'y2="{_num(top + PLOT_HEIGHT)}" stroke="{colours.get(k["series"], MUTED)}" stroke-width="1.5" '
                    f'stroke-opacity="0.7"{dash}/>')
        body.append(_text(x + (4 if k["align"] == "left" else -4), 4 + k["row"] * charts.KNEE_ROW, k["label"],
                          size=charts.KNEE_SIZE, anchor="start" if k["align"] == "left" else "end", colour=MUTED,
                          baseline="hanging"))
    entries = [(colours[n], f"{n}: all sequences" if len(names) > 1 else "all sequences", False) for n in names]
    entries += [(colours[n], f"{n}: per sequence" if len(names) > 1 else "per sequence", True) for n in names]
    y = _legend(body, y, entries) + 4
    note = (f"solid: all sequences together; dashed: per sequence; measured knee: the largest batch whose "
            f"per-sequence rate keeps {figures.KNEE_SHARE:.0%} of batch 1's")
    if beyond:
        note += f"; predicted knee beyond the sweep: batch {', '.join(f'{b:g}' for b in beyond)}"
    return RunChart("decode-vs-batch", "Decode rate vs batch", note, _svg(WIDTH, y, "decode rate vs batch", body))


def latency_chart(run: dict) -> RunChart | None:
    """A serving run's TTFT and ITL per test, drawn from every request: a line from min to max, a box
    over the middle half, a tick at the median and a dot at p99; a panel per latency, each its own scale."""
    spreads = figures.latency_points([run], lambda r: "")
    if not spreads:
        return None
    for spread in spreads:
        spread["series"] = spread["series"].lstrip(" ·")
    label_width = max(text_width(s["series"], FONT) for s in spreads) + 10
    plot = WIDTH - label_width - 20
    body: list[str] = []
    y = 0.0
    for metric in dict.fromkeys(s["metric"] for s in spreads):
        rows = [s for s in spreads if s["metric"] == metric]
        colour = PHASE_COLOURS[PREFILL] if metric == "TTFT" else PHASE_COLOURS[DECODE]
        hi = max(s["max"] for s in rows) * 1.05 or 1.0
        at = lambda v: label_width + plot * v / hi  # noqa: E731
        body.append(_text(0, y + 9, metric, size=TITLE, colour=colour, weight="bold"))
        y += 22
        top = y
        for s in rows:
            mid = y + BAR / 2
            body.append(_text(label_width - 8, mid, s["series"], anchor="end"))
            body.append(f'<line x1="{_num(at(s["min"]))}" y1="{_num(mid)}" x2="{_num(at(s["max"]))}" y2="{_num(mid)}" '
                        f'stroke="{colour}"/>')
            box = max(at(s["p75"]) - at(s["p25"]), 1)
            body.append(f'<rect x="{_num(at(s["p25"]))}" y="{_num(y + 1)}" width="{_num(box)}" height="{BAR - 2}" '
                        f'fill="{colour}" fill-opacity="0.45"/>')
            median = _num(at(s["p50"]))
            body.append(f'<line x1="{median}" y1="{_num(y)}" x2="{median}" y2="{_num(y + BAR)}" stroke="{colour}" '
                        'stroke-width="2"/>')
            body.append(f'<circle cx="{_num(at(s["p99"]))}" cy="{_num(mid)}" r="3" fill="{colour}"/>')
            y += BAR + 6
        body.append(f'<line x1="{_num(label_width)}" y1="{_num(top)}" x2="{_num(label_width)}" y2="{_num(y)}" '
                    f'stroke="#888"/>')
        ticks = [(plot * t / hi, tick_label(t)) for t in nice_ticks(hi) if t <= hi]
        y = _x_axis(body, label_width, plot, y, ticks, f"{metric} (ms)") + 8
    return RunChart("latency", "Serving latency distributions",
                    "per request, ms: line min to max, box the middle half, tick the median, dot p99",
                    _svg(WIDTH, y, "serving latency distributions", body))


def timeline_chart(run: dict) -> RunChart | None:
    """A serving run's requests over time, as the report draws them (the same bars, colours and note): a row
    per request in sending order, grey while it waited for a slot, blue to its first token, orange to its
    last; a panel per test, each with its own time axis."""
    bars, left_out = serving_charts.timeline_points([run], lambda r: "")
    if not bars:
        return None
    plot, left = WIDTH - 50, 40
    body: list[str] = []
    y = 0.0
    for series in dict.fromkeys(b["series"] for b in bars):
        rows = [b for b in bars if b["series"] == series]
        count = max(b["request"] for b in rows) + 1
        height = min(PLOT_HEIGHT, max(40, count * 4))
        hi = max(b["end_s"] for b in rows) * 1.02 or 1.0
        body.append(_text(0, y + 9, series.lstrip(" ·"), size=TITLE, weight="bold"))
        y += 22
        step = height / count
        for b in rows:
            row_y = _num(y + (b["request"] + 0.5) * step)  # the first request sent at the top
            body.append(f'<line x1="{_num(left + plot * b["start_s"] / hi)}" y1="{row_y}" '
                        f'x2="{_num(left + plot * b["end_s"] / hi)}" y2="{row_y}" '
                        f'stroke="{serving_charts.TIMELINE_COLOURS[b["phase"]]}" stroke-width="{_num(min(2, step))}"/>')
        body.append(_text(left - 6, y + 6, "1", anchor="end", colour=MUTED))
        body.append(_text(left - 6, y + height - 6, str(count), anchor="end", colour=MUTED))
        y += height + 4
        ticks = [(plot * t / hi, tick_label(t)) for t in nice_ticks(hi) if t <= hi]
        y = _x_axis(body, left, plot, y, ticks, "time from the test's start (s)") + 8
    y = _legend(body, y, [(colour, phase, False) for phase, colour in serving_charts.TIMELINE_COLOURS.items()])
    return RunChart("requests-timeline", "Requests over time", serving_charts.timeline_note(left_out),
                    _svg(WIDTH, y, "timeline of requests: wait for a slot, prefill, decode", body))


def server_series_chart(run: dict) -> RunChart | None:
    """The server's own series under the timeline: a panel per test, a line per metric, each metric on its
    own scale (the panel's right-hand label is its peak)."""
    points = serving_charts.series_points([run], lambda r: "")
    if not points:
        return None
    plot, left = WIDTH - 50, 40
    body: list[str] = []
    y = 0.0
    metrics = list(dict.fromkeys(p["metric"] for p in points))
    colours = {m: SERIES_COLOURS[i % len(SERIES_COLOURS)] for i, m in enumerate(metrics)}
    for series in dict.fromkeys(p["series"] for p in points):
        rows = [p for p in points if p["series"] == series]
        hi, lo = max(max(p["t_s"] for p in rows) * 1.02, 1e-3), 0.0
        body.append(_text(0, y + 9, series.lstrip(" ·"), size=TITLE, weight="bold"))
        y += 22
        for metric in dict.fromkeys(p["metric"] for p in rows):
            line = [p for p in rows if p["metric"] == metric]
            top = max(p["value"] for p in line) or 1.0
            height = 40
            path = " ".join(f"{_num(left + plot * (p['t_s'] - lo) / (hi - lo))},"
                            f"{_num(y + height * (1 - p['value'] / top))}" for p in line)
            body.append(f'<polyline points="{path}" fill="none" stroke="{colours[metric]}" stroke-width="1.5"/>')
            body.append(_text(left - 6, y + 6, tick_label(top), anchor="end", colour=MUTED))
            body.append(_text(left - 6, y + height - 4, "0", anchor="end", colour=MUTED))
            body.append(_text(left + 4, y + 6, metric, colour=colours[metric]))
            y += height + 8
        ticks = [(plot * (t - lo) / (hi - lo), tick_label(t)) for t in nice_ticks(hi) if t <= hi]
        y = _x_axis(body, left, plot, y, ticks, "time from the test's start (s)") + 8
    return RunChart("server-series", "The server over time", serving_charts.series_note(),
                    _svg(WIDTH, y, "the server's own metrics over time", body))


def run_charts(run: dict) -> list[RunChart]:
    """The charts of a run's page: those its tests give data for (the server's series under the timeline)."""
    return [chart for make in (phase_chart, depth_chart, batch_chart, latency_chart, timeline_chart,
                               server_series_chart)
            if (chart := make(run)) is not None]
