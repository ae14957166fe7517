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

from pdx.reports.rows import BLENDED, DECODE, PHASES, PREFILL

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
PHASE_COLOURS = {PREFILL: "#2563eb", DECODE: "#ea580c", BLENDED: "#7c3aed"}
CEILING_COLOUR = "#9ca3af"
VERDICT_COLOURS = {"better": "#16a34a", "worse": "#dc2626", "not significant": "#9ca3af", "not compared": "#d1d5db"}
WIDTH = 600
# Series within one bar group: full colour first, then lighter shades of the same phase colour.
SHADES = [1.0, 0.62, 0.38, 0.22, 0.12, 0.07]
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
    y = {"field": "label", "type": "nominal", "title": None, "sort": None}
    offset = {"yOffset": {"field": "series", "type": "nominal", "sort": series}} if grouped else {}
    shade = {"opacity": {"field": "series", "type": "nominal", "title": label_title, "sort": series,
                         "scale": {"domain": series, "range": SHADES[:len(series)]},
                         "legend": {"orient": "bottom", "columns": 1, "symbolType": "square"}}} if grouped else {}
    step = 11 * len(series) + 8 if grouped else 20

    def panel(phase: str, values: list[dict]) -> dict:
        layers = []
        if any(v.get("ceiling") for v in values):
            layers.append({"transform": [{"filter": "isValid(datum.ceiling)"}],
                           "mark": {"type": "bar", "color": CEILING_COLOUR, "opacity": 0.22, "stroke": CEILING_COLOUR,
                                    "strokeDash": [4, 2], "strokeWidth": 1},
                           "encoding": {"y": y, **offset,
                                        "x": {"field": "ceiling", "type": "quantitative", "axis": RATE_AXIS}}})
        layers.append({"mark": {"type": "bar", "color": PHASE_COLOURS[phase]},
                       "encoding": {"y": y, **offset, **shade,
                                    "x": {"field": "rate", "type": "quantitative", "axis": RATE_AXIS}}})
        if any(v.get("lo") is not None for v in values):
            layers.append({"transform": [{"filter": "isValid(datum.lo)"}], "mark": {"type": "rule", "color": "#777"},
                           "encoding": {"y": y, **offset, "x": {"field": "lo", "type": "quantitative"},
                                        "x2": {"field": "hi"}}})
        if any(v.get("note") for v in values):
            layers.append({"transform": [{"filter": "isValid(datum.note)"}],
                           "mark": {"type": "text", "align": "left", "dx": 4, "fontSize": 10, "color": "#666"},
                           "encoding": {"y": y, **offset, "x": {"field": "rate", "type": "quantitative"},
                                        "text": {"field": "note"}}})
        return {"width": WIDTH // 2 - 20 if side_by_side else WIDTH, "height": {"step": step}, "layer": layers}

    body = _per_phase(data, panel, vertical=not side_by_side)
    if side_by_side:
        # One row per label across the phases: the labels are written once, left of the first panel.
        for later in body["hconcat"][1:]:
            for layer in later["layer"]:
                layer["encoding"]["y"] = {**y, "axis": None}
        body["resolve"] = {"scale": {"y": "shared"}}
    return _spec(body, f"measured rate vs ceiling by {label_title}")


def _series_colour(values: list[dict]) -> dict:
    return {"field": "series", "type": "nominal", "title": None, "scale": {"scheme": "tableau10"},
            "legend": {"orient": "bottom", "columns": 1} if len({v["series"] for v in values}) > 1 else None}


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
        knee_x = {"field": "batch", "type": "quantitative"}
        layers.append({"data": {"values": knees}, "mark": {"type": "rule", "strokeWidth": 1.5, "opacity": 0.7},
                       "encoding": {"x": knee_x, "color": colour,
                                    "strokeDash": {"field": "kind", "type": "nominal", "legend": None,
                                                   "scale": {"domain": ["measured knee", "predicted knee"],
                                                             "range": [[1, 0], [2, 2]]}}}})
        layers.append({"data": {"values": knees},
                       "mark": {"type": "text", "align": "left", "baseline": "top", "dx": 4, "y": 2, "fontSize": 10,
                                "color": "#666"},
                       "encoding": {"x": knee_x, "text": {"field": "kind"}}})
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
