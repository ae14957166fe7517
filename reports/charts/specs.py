"""Vega-Lite specifications of pdx's charts: data in, a JSON-able dict out.

Each function takes plain records (lists of dicts) and returns a spec; the
renderer turns specs into SVG at build time and the site keeps them beside
each page, so anyone can re-plot the same data. Every axis names its unit;
a phase keeps its colour (prefill blue, decode orange) on every chart, and
where several series share a chart the phases sit in separate panels whose
titles carry that colour.
"""

from __future__ import annotations

import math
import re
import unicodedata

from pdx.reports.rows import BLENDED, DECODE, PHASES, PREFILL

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
PHASE_COLOURS = {PREFILL: "#2563eb", DECODE: "#ea580c", BLENDED: "#7c3aed"}
CEILING_COLOUR = "#9ca3af"
VERDICT_COLOURS = {"better": "#16a34a", "worse": "#dc2626", "not significant": "#9ca3af", "not compared": "#d1d5db"}
WIDTH = 600
# Series within one bar group: a hue each (shades of one phase colour read as one series); the panel's
# title keeps the phase's colour.
SERIES_SCHEME = "tableau10"
SERIES_COLOURS = 10  # the hues of SERIES_SCHEME: more series than this would repeat one
RATE_AXIS = {"title": "tokens/s", "format": "~s"}
CONFIG = {
    "background": None,
    "aria": False,  # per-mark descriptions cost ~40% of rendering; each chart gets one aria-label
    # vl-convert lays text out with Arial's metrics (and a one-name font is cheapest to
    # resolve); pages show it in Arial or a metric twin (pdx.css).
    "font": "Arial",
    "view": {"stroke": None},
    "axis": {"labelFontSize": 11, "titleFontSize": 11, "titleFontWeight": "normal", "gridOpacity": 0.35,
             "labelLimit": 0},  # 0: no limit, and no costly measuring
    "legend": {"orient": "bottom", "labelFontSize": 11, "titleFontSize": 11, "labelLimit": 0},
    "title": {"anchor": "start", "fontSize": 13, "fontWeight": "bold", "offset": 8},
    "concat": {"spacing": 28},
}


# What SVG (XML 1.0) cannot carry: C0 controls but tab, newline and return, lone surrogates, and
# U+FFFE/U+FFFF. vl-convert aborts the whole process (a Rust panic) on the controls.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def chart_text(text: str) -> str:
    """A name as a chart can show it: any character SVG cannot hold becomes U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def _drawable(value):
    """A spec's data with every string drawable and every non-finite number missing (null)."""
    if isinstance(value, str):
        return chart_text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list):
        return [_drawable(v) for v in value]
    if isinstance(value, dict):
        return {k: _drawable(v) for k, v in value.items()}
    return value


# Arial's advance widths (thousandths of an em) of printable ASCII, from space to "~": what
# vl-convert lays chart text out with (CONFIG's font), so labels placed here do not collide there.
_ARIAL = [278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, *[556] * 10, 278, 278,
          584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667,
          778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556,
          278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500,
          334, 260, 334, 584]


def text_width(text: str, size: float) -> float:
    """The width (px) of ``text`` set in Arial at ``size`` px; a character outside ASCII counts as
    wide as the widest Latin letters (East Asian wide ones as a full em), so the estimate errs long."""
    total = 0
    for ch in text:
        code = ord(ch)
        if 32 <= code <= 126:
            total += _ARIAL[code - 32]
        elif ch == "\u00b7":  # the middle dot names join with
            total += 278
        else:
            total += 1000 if unicodedata.east_asian_width(ch) in "WF" else 722
    return total * size / 1000


# Past this ratio of the largest figure of a panel to its smallest rate, a linear axis leaves the small
# bars slivers: the panel's rate axis turns logarithmic, and its title says so.
LOG_SPREAD = 40.0
NOTE_SIZE = 10


def rate_scale(values: list[dict], width: float, note_size: float = NOTE_SIZE) -> tuple[dict, dict, float | None]:
    """The x scale and axis of one panel of rate bars, fitted to its own figures: linear from 0, or
    logarithmic where the largest figure (rate, CI or ceiling) dwarfs the smallest rate; its domain
    reaches far enough right that each bar's note, written after the bar's furthest end (its
    ceiling's, its CI's), stays inside the panel. Returns (scale, axis, the log scale's floor or None)."""
    tops = [(max(v["rate"], v.get("ceiling") or 0.0, v.get("hi") or 0.0), text_width(v.get("note") or "", note_size))
            for v in values if v.get("rate") is not None]
    positive = [v["rate"] for v in values if (v.get("rate") or 0) > 0]
    if not tops or not positive:
        return {}, RATE_AXIS, None
    largest = max(top for top, _ in tops)
    log = largest / min(positive) > LOG_SPREAD
    room = lambda tw: max(width - 8 - tw, width / 3)  # noqa: E731  (a note longer than 2/3 of a panel may run past it)
    if log:
        floor = 10 ** math.floor(math.log10(min(positive)))
        span = max(math.log10(top / floor) * width / room(tw) for top, tw in tops)
        top = floor * 10 ** max(span, math.log10(largest / floor) * 1.02)
        scale = {"type": "log", "domain": [floor, top], "nice": False, "clamp": True}
        return scale, {**RATE_AXIS, "title": "tokens/s (log scale)"}, floor
    top = max(max(t * width / room(tw) for t, tw in tops), largest * 1.02)
    return {"domain": [0, top], "nice": False, "zero": True}, RATE_AXIS, None


def _spec(body: dict, description: str) -> dict:
    return {"$schema": SCHEMA, "description": description, "config": CONFIG, **_drawable(body)}


def _per_phase(data: list[dict], panel, phases=PHASES, vertical: bool = True) -> dict:
    """One panel per phase present, titled in the phase's colour."""
    panels = []
    for phase in phases:
        values = [d for d in data if d["phase"] == phase]
        if values:
            panels.append({"title": {"text": phase, "color": PHASE_COLOURS[phase]}, "data": {"values": values},
                           **panel(phase, values)})
    return {"vconcat" if vertical else "hconcat": panels}


def _same_labels(data: list[dict]) -> bool:
    """Every phase present has the same labels, in the same order (one row per system)."""
    by_phase: dict[str, list] = {}
    for d in data:
        by_phase.setdefault(d["phase"], []).append(d["label"])
    return len(by_phase) > 1 and len({tuple(v) for v in by_phase.values()}) == 1


def phase_bars(data: list[dict], label_title: str) -> dict:
    """Measured rate per label and phase, with its 95% CI and, where stored, the
    ceiling behind it (grey, dashed) and the fraction reached. Several series
    (runs, systems) sit side by side within a label, told apart by shade.

    ``data``: {label, series, phase, rate, lo, hi, ceiling, note}; all but label, phase, rate may be None.
    """
    series = list(dict.fromkeys(d.get("series") or "" for d in data))
    grouped = len(series) > 1
    side_by_side = _same_labels(data) and not grouped
    y: dict[str, object] = {"field": "label", "type": "nominal", "title": None, "sort": None}
    offset: dict[str, object] = {"yOffset": {"field": "series", "type": "nominal", "sort": series}} if grouped else {}
    shade: dict[str, object] = {"color": {"field": "series", "type": "nominal", "title": label_title, "sort": series,
                       "scale": {"scheme": SERIES_SCHEME, "domain": series},
                       "legend": {"orient": "bottom", "columns": 1, "symbolType": "square"}}} if grouped else {}
    # With several series the step is each bar's (Vega-Lite sizes the offset band), the label's band then n bars.
    step = 12 if grouped else 20

    def panel(phase: str, values: list[dict]) -> dict:
        width = WIDTH // 2 - 20 if side_by_side else WIDTH
        scale, axis, floor = rate_scale(values, width)
        # A log scale has no zero: bars start at its floor.
        start: dict[str, object] = {"x2": {"datum": floor}} if floor else {}
        x: dict[str, object] = {"type": "quantitative", "scale": scale} if scale else {"type": "quantitative"}
        layers: list[dict[str, object]] = []
        if any(v.get("ceiling") for v in values):
            layers.append({"transform": [{"filter": "isValid(datum.ceiling)"}],
                           "mark": {"type": "bar", "color": CEILING_COLOUR, "opacity": 0.22, "stroke": CEILING_COLOUR,
                                    "strokeDash": [4, 2], "strokeWidth": 1},
                           "encoding": {"y": y, **offset, "x": {"field": "ceiling", **x, "axis": axis}, **start}})
        layers.append({"mark": {"type": "bar", "color": PHASE_COLOURS[phase]},
                       "encoding": {"y": y, **offset, **shade, "x": {"field": "rate", **x, "axis": axis}, **start}})
        if any(v.get("lo") is not None for v in values):
            layers.append({"transform": [{"filter": "isValid(datum.lo)"}], "mark": {"type": "rule", "color": "#777"},
                           "encoding": {"y": y, **offset, "x": {"field": "lo", **x}, "x2": {"field": "hi"}}})
        if any(v.get("note") for v in values):
            # The note follows the bar's furthest end (its ceiling's, its CI's), so no line strikes it.
            layers.append({"transform": [{"filter": "isValid(datum.note)"},
                                         {"calculate": "max(datum.rate, isValid(datum.ceiling) ? datum.ceiling : 0,"
                                                       " isValid(datum.hi) ? datum.hi : 0)", "as": "note_at"}],
                           "mark": {"type": "text", "align": "left", "dx": 4, "fontSize": NOTE_SIZE, "color": "#666"},
                           "encoding": {"y": y, **offset, "x": {"field": "note_at", **x}, "text": {"field": "note"}}})
        return {"width": width, "height": {"step": step}, "layer": layers}

    body = _per_phase(data, panel, vertical=not side_by_side)
    if side_by_side:
        # One row per label across the phases: the labels are written once, left of the first panel.
        for later in body["hconcat"][1:]:
            for layer in later["layer"]:
                layer["encoding"]["y"] = {**y, "axis": None}
        body["resolve"] = {"scale": {"y": "shared"}}
    return _spec(body, f"measured rate vs ceiling by {label_title}")


def _series_colour(values: list[dict]) -> dict:
    """One colour per series, each named in the legend (even a single one: a line says whose it is)."""
    named = any(v["series"] for v in values)
    return {"field": "series", "type": "nominal", "title": None, "scale": {"scheme": SERIES_SCHEME},
            "legend": {"orient": "bottom", "columns": 1} if named else None}


KNEE_SIZE = 10
KNEE_ROW = 13  # px between rows of knee labels


def knee_rows(knees: list[dict], batches: list[int], width: float) -> list[dict]:
    """Each knee with the row its label takes (``row``, from the top) and its side (``align``): a label
    goes right of its rule, or left of it in the right half of the plot, in the first row where it
    meets no other label."""
    lo, hi = math.log2(min(batches)), math.log2(max(batches))

    def px(batch: float) -> float:
        return width * (math.log2(batch) - lo) / (hi - lo) if hi > lo else 0.0

    taken: list[list[tuple[float, float]]] = []
    out = []
    for knee in sorted(knees, key=lambda k: (k["batch"], k["kind"], k["series"])):
        at, wide = px(knee["batch"]), text_width(knee["label"], KNEE_SIZE) + 6
        left = at > width / 2
        span = (at - wide - 2, at) if left else (at, at + wide + 2)
        row = next((i for i, spans in enumerate(taken) if all(span[1] <= a or span[0] >= b for a, b in spans)),
                   len(taken))
        if row == len(taken):
            taken.append([])
        taken[row].append(span)
        out.append({**knee, "row": row, "y": 2 + row * KNEE_ROW, "align": "right" if left else "left"})
    return out


def rate_vs_depth(data: list[dict]) -> dict:
    """Rate against the tokens already in the KV cache: ``data`` {series, phase, depth, rate}."""

    def panel(phase: str, values: list[dict]) -> dict:
        return {"width": WIDTH // 2 - 20, "height": 200, "mark": {"type": "line", "point": True},
                "encoding": {"x": {"field": "depth", "type": "quantitative", "title": "context depth (tokens)"},
                             "y": {"field": "rate", "type": "quantitative", "axis": RATE_AXIS},
                             "color": _series_colour(values)}}

    return _spec(_per_phase(data, panel, phases=(PREFILL, DECODE), vertical=False), "rate vs context depth")


def batch_sweep(data: list[dict], knees: list[dict]) -> dict:
    """Decode rate against batch: aggregate (solid) and per sequence (dashed),
    with the predicted knee (dashed rule) and the measured one (solid rule).

    ``data``: {series, batch, aggregate, per_sequence}; ``knees``: {series, batch, kind}.
    """
    batches = sorted({d["batch"] for d in data})
    x = {"field": "batch", "type": "quantitative", "title": "batch (sequences)",
         "scale": {"type": "log", "base": 2}, "axis": {"values": batches, "format": "d"}}
    colour = _series_colour(data)
    layers = [{"data": {"values": data},
               "transform": [{"fold": ["aggregate", "per_sequence"], "as": ["measure", "rate"]}],
               "mark": {"type": "line", "point": True},
               "encoding": {"x": x, "y": {"field": "rate", "type": "quantitative", "axis": RATE_AXIS},
                            "color": colour,
                            "strokeDash": {"field": "measure", "type": "nominal", "legend": None,
                                           "scale": {"domain": ["aggregate", "per_sequence"],
                                                     "range": [[1, 0], [5, 3]]}}}}]
    if knees:
        several = len({d["series"] for d in data}) > 1
        knees = knee_rows([{**k, "label": f"{k['kind']}: {k['series']}" if several else k["kind"]} for k in knees],
                          batches, WIDTH)
        knee_x = {"field": "batch", "type": "quantitative"}
        layers.append({"data": {"values": knees}, "mark": {"type": "rule", "strokeWidth": 1.5, "opacity": 0.7},
                       "encoding": {"x": knee_x, "color": colour,
                                    "strokeDash": {"field": "kind", "type": "nominal", "legend": None,
                                                   "scale": {"domain": ["measured knee", "predicted knee"],
                                                             "range": [[1, 0], [2, 2]]}}}})
        # Labels in rows, each clear of the others (knee_rows), on the side of its rule with room.
        for align, dx in (("left", 4), ("right", -4)):
            placed = [k for k in knees if k["align"] == align]
            if placed:
                layers.append({"data": {"values": placed},
                               "mark": {"type": "text", "align": align, "baseline": "top", "dx": dx,
                                        "fontSize": KNEE_SIZE, "color": "#666"},
                               "encoding": {"x": knee_x, "y": {"field": "y", "type": "quantitative", "scale": None},
                                            "text": {"field": "label"}}})
    body = {"title": {"text": DECODE, "color": PHASE_COLOURS[DECODE]}, "width": WIDTH, "height": 220,
            "layer": layers, "resolve": {"scale": {"strokeDash": "independent"}}}
    return _spec(body, "decode rate vs batch")


def change_bars(data: list[dict]) -> dict:
    """New against baseline per test: {test, change (new/base - 1), verdict}."""
    body = {"data": {"values": data}, "width": WIDTH, "height": {"step": 20},
            "layer": [
                {"mark": {"type": "bar", "height": {"band": 0.7}},
                 "encoding": {"y": {"field": "test", "type": "nominal", "title": "test", "sort": None},
                              "x": {"field": "change", "type": "quantitative",
                                    "axis": {"title": "rate change, new vs baseline (%)", "format": "+.0%"}},
                              "color": {"field": "verdict", "type": "nominal", "title": None,
                                        "scale": {"domain": list(VERDICT_COLOURS),
                                                  "range": list(VERDICT_COLOURS.values())}}}},
                {"mark": {"type": "rule", "color": "#666"}, "encoding": {"x": {"datum": 0}}},
            ]}
    return _spec(body, "rate change per test")


def latency_distributions(data: list[dict]) -> dict:
    """Serving latencies per series, one panel per metric: {series, metric, min, p25, p50, p75, p99, max} in ms.

    Drawn from the summaries: a thin rule from min to max, a box over the
    quartiles, a tick at the median and a dot at p99.
    """
    y = {"field": "series", "type": "nominal", "title": None}
    panels = []
    for metric in dict.fromkeys(d["metric"] for d in data):
        colour = PHASE_COLOURS[PREFILL] if metric == "TTFT" else PHASE_COLOURS[DECODE]
        x = {"type": "quantitative", "title": f"{metric} (ms)", "scale": {"zero": False}}
        panels.append({"title": {"text": metric, "color": colour}, "data": {"values": [d for d in data
                                                                                        if d["metric"] == metric]},
                       "width": WIDTH // 2 - 20, "height": {"step": 22},
                       "layer": [
                           {"mark": {"type": "rule", "color": colour}, "encoding": {"y": y, "x": {**x, "field": "min"},
                                                                                     "x2": {"field": "max"}}},
                           {"mark": {"type": "bar", "color": colour, "opacity": 0.45, "height": 12},
                            "encoding": {"y": y, "x": {**x, "field": "p25"}, "x2": {"field": "p75"}}},
                           {"mark": {"type": "tick", "color": colour, "thickness": 2, "size": 14},
                            "encoding": {"y": y, "x": {**x, "field": "p50"}}},
                           {"mark": {"type": "point", "color": colour, "filled": True, "size": 24},
                            "encoding": {"y": y, "x": {**x, "field": "p99"}}},
                       ]})
    return _spec({"hconcat": panels}, "serving latency distributions")


STEP_COLOURS = {"regression": VERDICT_COLOURS["worse"], "improvement": VERDICT_COLOURS["better"]}


def history_line(points: list[dict], steps: list[dict]) -> dict:
    """One test over engine versions: {label, mean, low, high} per run, in order, each with its 95% CI;
    {after, kind} per step, a rule at the first version of the new level."""
    x = {"field": "label", "type": "ordinal", "sort": None, "title": "engine version (oldest first)",
         "axis": {"labelAngle": -45}}
    layers = [
        {"mark": {"type": "rule", "color": CEILING_COLOUR}, "transform": [{"filter": "datum.low != null"}],
         "encoding": {"x": x, "y": {"field": "low", "type": "quantitative"}, "y2": {"field": "high"}}},
        {"mark": {"type": "line", "point": {"color": PHASE_COLOURS[DECODE]}, "color": PHASE_COLOURS[DECODE]},
         "encoding": {"x": x, "y": {"field": "mean", "type": "quantitative", "axis": RATE_AXIS,
                                    "scale": {"zero": False}}}},
    ]
    if steps:
        layers.append({"data": {"values": steps}, "mark": {"type": "rule", "strokeDash": [4, 3], "strokeWidth": 2},
                       "encoding": {"x": {"field": "after", "type": "ordinal", "sort": None},
                                    "color": {"field": "kind", "type": "nominal", "title": "step",
                                              "scale": {"domain": list(STEP_COLOURS),
                                                        "range": list(STEP_COLOURS.values())}}}})
    body = {"data": {"values": points}, "width": WIDTH, "height": 180, "layer": layers}
    return _spec(body, "rate over engine versions with 95% CIs and the steps found")
