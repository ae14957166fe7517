"""A run's serving tests as OpenTelemetry (``pdx export RUN --format otlp``): its requests as spans
and the server's time series as metrics, in OTLP's JSON encoding, for people who keep their own
dashboards (an OpenTelemetry Collector's ``otlpjsonfile`` receiver reads the file).

The file is OTLP's JSON file format: one JSON object a line, an ``ExportTraceServiceRequest``
(``resourceSpans``) and, where the run has a server series, an ``ExportMetricsServiceRequest``
(``resourceMetrics``). The proto3 JSON mapping holds: lowerCamelCase keys, 64-bit integers (times in
ns since 1970) as decimal strings, enums as numbers, trace and span ids as hex (OTLP's exception).

- Traces: one per serving test sample, its id drawn from the run id, the test and the sample; a
  root span for the load run (first send to last end) and a client span per request, its attributes
  the GenAI conventions' token counts (``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
  ``gen_ai.request.max_tokens``) and pdx's own (role, cached tokens, TTFT), an event at its first
  token (and first answer token, where it thought), status ERROR with its error where it failed.
- Metrics: ``pdx.server.<name>`` per series (:mod:`pdx.domain.serving.server_series`): levels as gauges,
  counters as cumulative monotonic sums, each point at its reading's time.

Times are wall-clock: the sample's ``origin_unix_ns`` (the load run's start) plus pdx's ns from it (a
capacity search's points each from their own start, as the run stores their offsets). A
sample stored before pdx kept that has the test's start instead (a warm-up earlier than the truth);
the resource's ``pdx.clock`` attribute says which.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

import pdx
from pdx.contract.errors import PdxError
from pdx.reports.charts.serving import point_offsets
from pdx.domain.serving.server_series import COUNTERS, GAUGES

SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3
STATUS_OK, STATUS_ERROR = 1, 2
AGGREGATION_CUMULATIVE = 2


def _value(value) -> dict:
    """An OTLP AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _attributes(pairs: dict) -> list[dict]:
    return [{"key": k, "value": _value(v)} for k, v in pairs.items() if v is not None]


def _id(nbytes: int, *parts) -> str:
    """A stable id of ``nbytes`` bytes, in hex, from what it names (never all zero: OTLP's "no id")."""
    digest = hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:nbytes * 2]
    return digest if digest.strip("0") else "1".rjust(nbytes * 2, "0")


def _unix_ns(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1e9)


def _origin(test: dict, sample: dict) -> tuple[int, str]:
    """(wall-clock ns of the sample's load run's start, what it is)."""
    found = (sample.get("engine") or {}).get("origin_unix_ns")
    if isinstance(found, int):
        return found, "load_run_start"
    return _unix_ns(test["started_at"]), "test_start"


def _resource(run: dict, clock: str) -> dict:
    hardware = run.get("hardware") or {}
    return {"attributes": _attributes({
        "service.name": "pdx", "service.version": pdx.__version__, "pdx.run.id": run["id"],
        "pdx.contract.backend": run["backend"], "pdx.model": (run.get("model") or {}).get("name"),
        "pdx.engine": (run.get("engine") or {}).get("name"),
                                       "pdx.engine.version": (run.get("engine") or {}).get("version"),
        "host.name": hardware.get("name"), "pdx.clock": clock})}


SCOPE = {"name": "pdx.serve-bench", "version": pdx.__version__}


def _request_span(request: dict, trace_id: str, parent: str, origin: int, test: dict, sample_idx: int) -> dict:
    """``origin``: the wall-clock ns the request's own load run started at."""
    send = origin + request["send_ns"]
    end = send + (request.get("end_ns") or 0)
    events = []
    if request.get("first_ns") is not None:
        events.append({"timeUnixNano": str(send + request["first_ns"]), "name": "first_token"})
    if request.get("answer_ns") is not None:
        events.append({"timeUnixNano": str(send + request["answer_ns"]), "name": "first_answer_token"})
    ok = request.get("status") == "ok"
    status = {"code": STATUS_OK} if ok else {"code": STATUS_ERROR, "message": request.get("error") or "failed"}
    usage = request.get("usage") or {}
    return {
        "traceId": trace_id, "spanId": _id(8, trace_id, "request", request["idx"]), "parentSpanId": parent,
        "name": f"request {request.get('role') or 'load'}", "kind": SPAN_KIND_CLIENT,
        "startTimeUnixNano": str(send), "endTimeUnixNano": str(max(end, send)),
        "attributes": _attributes({
            "gen_ai.usage.input_tokens": request.get("n_prompt"), "gen_ai.usage.output_tokens": request.get("n_gen"),
            "gen_ai.request.max_tokens": request.get("max_tokens"), "pdx.test": test["name"],
            "pdx.sample": sample_idx, "pdx.request.idx": request["idx"], "pdx.request.role": request.get("role"),
            "pdx.request.shard": request.get("shard"),
            "pdx.request.ttft_ms": request["first_ns"] / 1e6 if request.get("first_ns") is not None else None,
            "pdx.request.cached_tokens": usage.get("cached_tokens") if isinstance(usage.get("cached_tokens"),
                                                                                  int) else None,
            "pdx.request.reasoning_tokens": request.get("n_reasoning"),
            "http.response.status_code": request.get("http_status")}),
        "events": events, "status": status}


def _samples(test: dict) -> list[tuple[int, dict, list[dict]]]:
    """(sample index, sample, its requests) of a serving test."""
    requests = test.get("requests") or []
    return [(i, s, [r for r in requests if r.get("sample_idx") == i]) for i, s in enumerate(test.get("samples") or [])]


def traces(run: dict) -> tuple[dict, str]:
    """The run's ``ExportTraceServiceRequest`` and the clock its times are on."""
    spans, clock = [], "load_run_start"
    for test in run["tests"]:
        if test.get("kind") != "serve":
            continue
        for i, sample, requests in _samples(test):
            if not requests:
                continue
            origin, found = _origin(test, sample)
            clock = found if found != "load_run_start" else clock
            # A capacity search's points are load runs of their own, each timed from its start.
            offsets = point_offsets(test)
            start_of = {id(r): origin + offsets.get(r["role"], 0) for r in requests}  # a role: every request has one
            trace_id = _id(16, run["id"], test["name"], i)
            root = _id(8, trace_id, "test")
            first = min(start_of[id(r)] + r["send_ns"] for r in requests)
            last = max(start_of[id(r)] + r["send_ns"] + (r.get("end_ns") or 0) for r in requests)
            spans.append({"traceId": trace_id, "spanId": root, "name": f"serve-bench {test['name']}",
                          "kind": SPAN_KIND_INTERNAL, "startTimeUnixNano": str(min(first, origin)),
                          "endTimeUnixNano": str(last),
                          "attributes": _attributes({"pdx.test": test["name"], "pdx.sample": i,
                                                     "pdx.requests": len(requests),
                                                     "pdx.scenario": (test.get("spec") or {}).get("scenario")}),
                          "status": {"code": STATUS_OK if test.get("status") == "ok" else STATUS_ERROR}})
            spans.extend(_request_span(r, trace_id, root, start_of[id(r)], test, i) for r in requests)
    if not spans:
        raise PdxError(f"run {run['id'][:12]}: no serving requests to export as spans",
                       "--format otlp exports serve-bench runs; see `pdx show RUN`")
    return {"resourceSpans": [{"resource": _resource(run, clock), "scopeSpans": [{"scope": SCOPE,
                                                                                  "spans": spans}]}]}, clock


def metrics(run: dict, clock: str) -> dict | None:
    """The run's ``ExportMetricsServiceRequest`` of its server series; None: it has none."""
    points: dict[str, list[dict]] = {}
    for test in run["tests"]:
        for i, sample, _ in _samples(test):
            series = (sample.get("engine") or {}).get("server_series")
            if not isinstance(series, dict):
                continue
            origin, _ = _origin(test, sample)
            times = series.get("t_ns") or []
            start = str(origin + (times[0] if times else 0))
            labels = _attributes({"pdx.test": test["name"], "pdx.sample": i})
            for name, values in (series.get("metrics") or {}).items():
                for t, value in zip(times, values):
                    if value is None:
                        continue
                    point = {"timeUnixNano": str(origin + t), "asDouble": float(value), "attributes": labels}
                    if name in COUNTERS:
                        point["startTimeUnixNano"] = start
                    points.setdefault(name, []).append(point)
    if not points:
        return None
    out = []
    for name, found in points.items():
        metric: dict[str, Any] = {"name": f"pdx.server.{name}", "unit": "1" if name == "kv_cache_usage" else "{count}",
                  "description": f"the server's /metrics, read as pdx's {name} (docs/serving.md names the source)"}
        if name in GAUGES:
            metric["gauge"] = {"dataPoints": found}
        else:
            metric["sum"] = {"dataPoints": found, "aggregationTemporality": AGGREGATION_CUMULATIVE,
                             "isMonotonic": True}
        out.append(metric)
    return {"resourceMetrics": [{"resource": _resource(run, clock), "scopeMetrics": [{"scope": SCOPE,
                                                                                      "metrics": out}]}]}


def export_otlp(run: dict) -> str:
    """The OTLP JSON file's text: the traces' line, then the metrics' where the run has a series."""
    spans, clock = traces(run)
    lines = [spans] + [m for m in [metrics(run, clock)] if m is not None]
    return "".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n" for line in lines)
