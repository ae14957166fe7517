"""Serving charts: a timeline of requests, and the capacity curve.

- Timeline: each request of a serving test as a row over time: grey from its
  scheduled send to its actual send (the wait for a slot), blue from send to
  first token (prefill, as the client saw it), orange from first to last
  token (decode). A capacity test's points follow one another on one axis.
- Capacity curve: per SLO metric, the value at the judged percentile of every
  point measured against the load (request rate or concurrency), the SLO as a
  dashed line and the capacity as a vertical rule.
"""

from __future__ import annotations

from typing import Iterable

from pdx.reports.charts.figures import Namer, newest_serving
from pdx.reports.charts.specs import CEILING_COLOUR, PHASE_COLOURS, SERIES_SCHEME, WIDTH, _spec
from pdx.reports.rows import DECODE, PREFILL

MAX_TIMELINE_TESTS = 3
MAX_TIMELINE_REQUESTS = 300  # per test: the first ones sent; the note says when more were left out
METRIC_SIDE = {"ttft": PREFILL, "e2el": PREFILL, "itl": DECODE, "tpot": DECODE}
WAIT_COLOUR = "#9ca3af"


def point_offsets(test: dict) -> dict[str, int]:
    """ns from the first point's start to each capacity point's (role) start; other tests: all 0."""
    found = (test.get("stats") or {}).get("capacity") or {}
    return {p["role"]: p.get("origin_offset_ns") or 0 for p in found.get("points") or []}


def timeline_points(runs: Iterable[dict], namer: Namer) -> tuple[list[dict], int]:
    """Bars (series, request, phase, start_s, end_s) of the first serving tests' requests, and how many
    were left out."""
    out, left_out, tests = [], 0, 0
    for _, test, series in newest_serving(runs, namer):
        requests = [r for r in test.get("requests") or [] if r.get("first_ns") is not None]
        if test.get("kind") != "serve" or not requests or tests >= MAX_TIMELINE_TESTS:
            continue
        tests += 1
        offsets = point_offsets(test)
        ordered = sorted(requests, key=lambda r: offsets.get(r.get("role"), 0) + (r.get("send_ns") or 0))
        left_out += max(0, len(ordered) - MAX_TIMELINE_REQUESTS)
        for n, r in enumerate(ordered[:MAX_TIMELINE_REQUESTS]):
            base = offsets.get(r.get("role"), 0)
            send = base + (r.get("send_ns") or 0)
            scheduled = base + r["scheduled_ns"] if r.get("scheduled_ns") is not None else send
            first = send + r["first_ns"]
            last = send + (r["events"][-1][0] if r.get("events") else r["first_ns"])
            for phase, a, b in (("wait", scheduled, send), ("prefill", send, first), ("decode", first, last)):
                if b > a:
                    out.append({"series": series, "request": n, "phase": phase, "start_s": a / 1e9,
                                "end_s": b / 1e9})
    return out, left_out


SERIES_SHOWN = {"running": "requests running", "waiting": "requests waiting", "kv_cache_usage": "KV-cache use"}


def series_points(runs: Iterable[dict], namer: Namer) -> list[dict]:
    """(series, metric, t_s, value) of the server's own time series beside the timeline's tests: the first
    sample's of each, on the same clock (its load run's start; a capacity test's first point's)."""
    out, tests = [], 0
    for _, test, series in newest_serving(runs, namer):
        if tests >= MAX_TIMELINE_TESTS:
            break
        found = next((s["engine"]["server_series"] for s in test.get("samples") or []
                      if isinstance((s.get("engine") or {}).get("server_series"), dict)), None)
        if not found:
            continue
        tests += 1
        times = found.get("t_ns") or []
        for metric, label in SERIES_SHOWN.items():
            for t, value in zip(times, (found.get("metrics") or {}).get(metric) or ()):
                if value is not None and t >= 0:  # from the load run's start, as the timeline (warm-up before it)
                    out.append({"series": series, "metric": label, "t_s": t / 1e9, "value": value})
    return out


def series_note() -> str:
    return ("the server's own /metrics, read every few hundred ms during the test on the timeline's clock: "
            "requests it was running and keeping waiting, and its KV-cache use where it exports one")


TIMELINE_COLOURS = {"wait": WAIT_COLOUR, "prefill": PHASE_COLOURS[PREFILL], "decode": PHASE_COLOURS[DECODE]}


def timeline_note(left_out: int) -> str:
    """The caption under a timeline of requests, the report's and a run page's."""
    note = "per request: grey the wait for a slot (scheduled to sent), blue to the first token, orange to the last"
    if left_out:
        note += f"; the first {MAX_TIMELINE_REQUESTS} of each test shown ({left_out} left out)"
    return note


def requests_timeline(data: list[dict]) -> dict:
    colours = TIMELINE_COLOURS
    body = {
        "data": {"values": data},
        "facet": {"row": {"field": "series", "type": "nominal", "title": None}},
        "resolve": {"scale": {"x": "independent", "y": "independent"}},
        "spec": {
            "width": WIDTH, "height": 160,
            "mark": {"type": "rule", "strokeWidth": 2},
            "encoding": {
                "x": {"field": "start_s", "type": "quantitative", "title": "time from the test's start (s)"},
                "x2": {"field": "end_s"},
                "y": {"field": "request", "type": "quantitative", "title": "request (in sending order)",
                      "sort": "descending", "axis": {"format": "d"}},
                "color": {"field": "phase", "type": "nominal", "title": None,
                          "scale": {"domain": list(colours), "range": list(colours.values())}},
            },
        },
    }
    return _spec(body, "timeline of requests: wait for a slot, prefill, decode")


def capacity_points(runs: Iterable[dict], namer: Namer) -> tuple[list[dict], list[dict]]:
    """(measurements, capacities): one record per point and SLO metric, and one per capacity test and metric."""
    points, marks = [], []
    for _, test, series in newest_serving(runs, namer):
        found = (test.get("stats") or {}).get("capacity")
        if not found:
            continue
        for metric, limit in found["slo"].items():
            label = f"{metric.upper()} p{found['percentile']:g} (ms)"
            for p in found["points"]:
                value = p["values"].get(metric)
                if isinstance(value, (int, float)):
                    points.append({"series": series, "metric": label, "side": METRIC_SIDE[metric],
                                   "load": p["x"], "value": value, "held": "holds" if p["held"] else "breaks"})
            marks.append({"series": series, "metric": label, "slo": limit, "capacity": found["capacity"],
                          "axis": found["axis"]})
    return points, marks


def capacity_curve(points: list[dict], marks: list[dict]) -> dict:
    axis = marks[0]["axis"] if marks else "rate"
    x_title = "concurrency (requests in flight)" if axis == "concurrency" else "request rate (requests/s)"
    panels = []
    for metric in dict.fromkeys(m["metric"] for m in marks):
        values = [p for p in points if p["metric"] == metric]
        limits = [m for m in marks if m["metric"] == metric]
        colour = PHASE_COLOURS[values[0]["side"]] if values else CEILING_COLOUR
        x = {"field": "load", "type": "quantitative", "title": x_title, "scale": {"type": "log"}}
        # Several series: each its own colour, named in the legend (one colour would join them unlabelled).
        several = len({p["series"] for p in values}) > 1
        by_series = {"field": "series", "type": "nominal", "title": None, "scale": {"scheme": SERIES_SCHEME},
                     "legend": {"orient": "bottom", "columns": 1}}
        panels.append({
            "title": {"text": metric, "color": colour}, "width": WIDTH // 2 - 20, "height": 200,
            "layer": [
                {"data": {"values": values}, "mark": {"type": "line", "color": colour, "opacity": 0.5},
                 "encoding": {"x": x, "y": {"aggregate": "mean", "field": "value", "type": "quantitative",
                                            "title": metric}, "detail": {"field": "series"},
                              **({"color": by_series} if several else {})}},
                {"data": {"values": values}, "mark": {"type": "point", "filled": True, "size": 40},
                 "encoding": {"x": x, "y": {"field": "value", "type": "quantitative"},
                              "shape": {"field": "held", "type": "nominal", "title": None,
                                        "scale": {"domain": ["holds", "breaks"], "range": ["circle", "cross"]}},
                              "color": by_series if several else {"value": colour}}},
                {"data": {"values": limits}, "mark": {"type": "rule", "color": "#dc2626", "strokeDash": [4, 3]},
                 "encoding": {"y": {"field": "slo", "type": "quantitative"}}},
                {"data": {"values": [m for m in limits if m["capacity"]]},
                 "mark": {"type": "rule", "color": "#16a34a"},
                 "encoding": {"x": {"field": "capacity", "type": "quantitative"}}},
            ]})
    return _spec({"hconcat": panels}, "capacity curve: SLO metrics against load, with the SLO and the capacity")
