"""GuideLLM's benchmark report (``guidellm run --output kind=json``, report version 2).

One report is one pdx run of serving tests against an OpenAI-compatible
server, a test per benchmark (a sweep's every strategy), each a ``load``
test as ``pdx serve-bench`` stores its own: a closed loop at the strategy's
streams (``synchronous``: 1; ``concurrent``: its streams), an open loop at its
rate (``poisson``; ``constant``, whose even arrivals the spec cannot say, so
the strategy is kept beside it; ``throughput``: all at once under its
concurrency cap). One sample spans the benchmark's duration.

Its per-request records (``requests.successful/errored/incomplete``) become
pdx request records: the send time, the first token, the last token and the
end from each request's ``info.timings`` (epoch seconds), the token counts
(GuideLLM prefers the server's ``usage``), and the error. GuideLLM keeps no
arrival time per token, so a stream is its first token and then the rest at
its last token, and pdx's pooled ITL is each request's mean gap, which is
what GuideLLM itself calls ITL (pdx's TPOT); GuideLLM's "TPOT" counts the
first token's wait as well. GuideLLM's own summary of each distribution is
kept in the test's engine record (``reported_by_tool``); a report saved
without request records (``--metrics sample_size=0``) has that summary as its
``reported`` serving figures instead, flagged as such.
"""

from __future__ import annotations

import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeGuard

from pdx.contract import record
from pdx.registry.bundle import fail
from pdx.registry.importers.common import (BIG_MAX, described_hardware, described_model, file_facts, imported_run,
                                           integer, number, text)
from pdx.registry.importers.serving_files import load_spec, request_record, serve_test, stream_events
from pdx.base.secrets import scrub_text

ORIGIN = "guidellm"
_STATUSES = ("successful", "errored", "incomplete")
_PERCENTILES = {"p001": 0.1, "p01": 1, "p05": 5, "p10": 10, "p25": 25, "p50": 50, "p75": 75, "p90": 90, "p95": 95,
                "p99": 99, "p999": 99.9}
# GuideLLM's distributions -> (pdx's serving figure, to ms): its "ITL" is a request's mean gap, pdx's TPOT.
_MAPPED = {"time_to_first_token_ms": ("ttft_ms", 1.0), "inter_token_latency_ms": ("tpot_ms", 1.0),
           "request_latency": ("e2el_ms", 1e3)}
_KEPT = ("time_to_first_token_ms", "inter_token_latency_ms", "time_per_output_token_ms", "request_latency",
         "requests_per_second", "output_tokens_per_second", "request_concurrency")


def looks_like(document: object) -> TypeGuard[dict[str, Any]]:
    return isinstance(document, dict) and isinstance(document.get("benchmarks"), list) and (
        "guidellm_version" in (document.get("metadata") or {}) or
        any(isinstance(b, dict) and b.get("type_") == "generative_benchmark" for b in document["benchmarks"]))


def _get(document: object, *keys: str) -> Any:  # a JSON value, None where a key is missing
    for key in keys:
        document = document.get(key) if isinstance(document, dict) else None
    return document


def _shown(value: object) -> str:
    return repr(value) if len(repr(value)) <= 24 else repr(value)[:21] + "..."


def _epoch(value: object, what: str, source: str | Path) -> float:
    return number(value, what, source, positive=True)


def _summary(dist: object, what: str, source: str | Path, scale: float = 1.0) -> dict[str, Any]:
    """One of GuideLLM's DistributionSummary objects (its successful requests) as pdx names its figures."""
    if not isinstance(dist, dict):
        return {}
    out = {}
    for key, name in (("mean", "mean"), ("median", "median"), ("std_dev", "std"), ("min", "min"), ("max", "max")):
        if dist.get(key) is not None:
            out[name] = number(dist[key], f"{what}.{key}", source, float("-inf")) * scale
    for key, p in (dist.get("percentiles") or {}).items():
        if key in _PERCENTILES and p is not None:
            out[f"p{_PERCENTILES[key]:g}"] = number(p, f"{what}.percentiles.{key}", source, float("-inf")) * scale
    return out


def _strategy(strategy: dict[str, Any], n_prompt: int, n_gen: int, n_requests: int,
              source: str | Path) -> dict[str, Any]:
    kind = text(strategy.get("type_"), "strategy.type_", source, 64)
    if kind == "synchronous":
        return load_spec(source, n_prompt, n_gen, n_requests, concurrency=1)
    if kind == "concurrent":
        return load_spec(source, n_prompt, n_gen, n_requests,
                         concurrency=integer(strategy.get("streams"), "strategy.streams", source, 1))
    if kind in ("poisson", "constant"):
        return load_spec(source, n_prompt, n_gen, n_requests,
                         rate=number(strategy.get("rate"), "strategy.rate", source, positive=True))
    if kind == "throughput":
        cap = strategy.get("max_concurrency")
        return load_spec(source, n_prompt, n_gen, n_requests, rate=float("inf"),
                         max_concurrency=None if cap is None else integer(cap, "strategy.max_concurrency", source, 1))
    raise fail(source, f"benchmark strategy {kind!r} is not one pdx reads (synchronous, concurrent, poisson, "
                       "constant, throughput)")


def _start(r: object) -> Any:  # a JSON value
    """When a request was sent (None for one that failed before it was)."""
    timings = _get(r, "info", "timings") or {}
    return timings.get("request_start") if timings.get("request_start") is not None else \
        (r.get("request_start_time") if isinstance(r, dict) else None)


def _request(idx: int, r: object, status: str, t0: float, open_loop: bool, source: str | Path) -> dict[str, Any]:
    where = f"request {idx}"
    if not isinstance(r, dict):
        raise fail(source, f"{where} is not an object")
    timings = _get(r, "info", "timings") or {}
    started = _start(r)
    if started is None and status == "successful":
        raise fail(source, f"{where} has no request_start")
    start = t0 if started is None else _epoch(started, f"{where} request_start", source)  # failed before it went
    n_in = integer(r.get("prompt_tokens") or 0, f"{where} prompt_tokens", source)
    n_out = integer(r.get("output_tokens") or 0, f"{where} output_tokens", source)
    send_ns = round((start - t0) * 1e9)
    scheduled = timings.get("scheduled_at")
    scheduled_ns = round((_epoch(scheduled, f"{where} scheduled_at", source) - t0) * 1e9) \
        if open_loop and scheduled is not None else None
    usage = {"prompt_tokens": n_in, "completion_tokens": n_out,
             "cached_tokens": integer(r["cached_tokens"], f"{where} cached_tokens", source)
             if r.get("cached_tokens") is not None else None}
    if status != "successful":
        reason = text(_get(r, "info", "error"), f"{where} error", source, 4096) or status
        return request_record(idx, n_in, n_out, send_ns, scheduled_ns=scheduled_ns, usage=usage,
                              error=reason if status == "errored" else f"incomplete: {reason}")
    first = _epoch(timings.get("first_token_iteration"), f"{where} first_token_iteration", source)
    last = _epoch(timings.get("last_token_iteration", first), f"{where} last_token_iteration", source)
    end = _epoch(timings.get("request_end", r.get("request_end_time")), f"{where} request_end", source)
    if not start <= first <= last <= end + 1e-6 or (end - start) * 1e9 > BIG_MAX:
        raise fail(source, f"{where}: its times are out of order (start, first token, last token, end)")
    first_ns, last_ns = round((first - start) * 1e9), round((last - start) * 1e9)
    return request_record(idx, n_in, n_out, send_ns, n_gen=n_out, first_ns=first_ns,
                          end_ns=max(round((end - start) * 1e9), last_ns), events=stream_events(first_ns, last_ns,
                                                                                                n_out),
                          usage=usage, scheduled_ns=scheduled_ns)


def _test(ordinal: int, b: object, data: dict[str, Any], source: str | Path) -> record.Test:
    if not isinstance(b, dict):
        raise fail(source, f"benchmark {ordinal} is not an object")
    where = f"benchmark {ordinal}"
    metrics = b.get("metrics")
    if not isinstance(metrics, dict) or not metrics:  # GuideLLM writes them for every benchmark it finished
        raise fail(source, f"{where} has no metrics ({_shown(metrics)}): not a benchmark GuideLLM finished")
    strategy = _get(b, "config", "strategy")
    if not isinstance(strategy, dict):
        raise fail(source, f"{where} names no strategy (config.strategy)")
    groups = b.get("requests") or {}
    if not isinstance(groups, dict):
        raise fail(source, f"{where} requests is {_shown(groups)}, not GuideLLM's object of request lists by status")
    for status in _STATUSES:
        listed = groups.get(status) or []
        if not isinstance(listed, list) or not all(isinstance(r, dict) for r in listed):
            raise fail(source, f"{where} requests.{status} is {_shown(listed)}, not a list of request records")
    raw = [(status, r) for status in _STATUSES for r in (groups.get(status) or [])]
    open_loop = strategy.get("type_") in ("poisson", "constant", "throughput")
    # Times from the earliest send or schedule: an open loop's first request can be due before it is sent.
    starts = [_epoch(_start(r), f"{where} request start", source) for _, r in raw if _start(r) is not None]
    starts += [_epoch(t, f"{where} scheduled_at", source) for _, r in raw
               if open_loop and (t := _get(r, "info", "timings", "scheduled_at")) is not None]
    t0 = min(starts) if starts else _epoch(b.get("start_time"), f"{where} start_time", source)
    requests = [_request(i, r, status, t0, open_loop, source) for i, (status, r) in enumerate(raw)]
    ok = [r for r in requests if r["status"] == "ok"]
    n_in = statistics.mode(r["n_prompt"] for r in ok) if ok else integer(data.get("prompt_tokens") or 1,
                                                                          "data.prompt_tokens", source)
    n_out = statistics.mode(r["n_gen"] for r in ok) if ok else integer(data.get("output_tokens") or 1,
                                                                        "data.output_tokens", source)
    totals = _get(b, "metrics", "request_totals") or {}
    n_requests = integer(totals.get("total", len(requests)), f"{where} request_totals.total", source)
    spec = _strategy(strategy, n_in, n_out, n_requests, source)
    kept = {key: _summary(_get(metrics, key, "successful"), key, source) for key in _KEPT if key in metrics}
    engine = {"strategy": {k: v for k, v in strategy.items() if isinstance(v, (str, int, float, bool))},
              "reported_by_tool": kept,
              "tool_warnings": [text(w.get("message"), "warning", source, 1024) for w in b.get("warnings") or []
                                if isinstance(w, dict)]}
    if not requests:
        reported = _reported(metrics, totals, source)
        if not any(reported[name] for name, _ in _MAPPED.values()) and not ({"request_throughput", "output_throughput"}
                                                                          & reported.keys()):
            raise fail(source, f"{where} has neither request records nor any of GuideLLM's summaries of them "
                               "(latencies, throughputs) in its metrics")
        engine["reported"] = {"serving": reported}
    duration = number(b.get("duration"), f"{where} duration", source, positive=True)
    when = datetime.fromtimestamp(_epoch(b.get("start_time", t0), f"{where} start_time", source), timezone.utc)
    return serve_test(ordinal, spec, requests, duration, sum(r["n_prompt"] for r in ok), sum(r["n_gen"] for r in ok),
                      engine, when.isoformat(), integer(totals.get("successful", len(ok)), "successful", source))


def _reported(metrics: dict[str, Any], totals: dict[str, Any], source: str | Path) -> dict[str, Any]:
    """A summary-only benchmark's figures in :func:`pdx.domain.serving.metrics.serving_stats`' shape."""
    completed = integer(totals.get("successful") or 0, "request_totals.successful", source)
    failed = integer(totals.get("errored") or 0, "request_totals.errored", source)
    figures: dict[str, Any] = {"requests": completed + failed, "completed": completed, "failed": failed}
    for key, (name, scale) in _MAPPED.items():
        figures[name] = _summary(_get(metrics, key, "successful"), key, source, scale)
    for key, name in (("requests_per_second", "request_throughput"), ("output_tokens_per_second", "output_throughput")):
        mean = _get(metrics, key, "successful", "mean")
        if mean is not None:
            figures[name] = number(mean, f"{key}.mean", source)
    return figures


def read(path: Path, document: object, text_: str, hardware: str | None = None) -> list[dict[str, Any]]:
    if not looks_like(document):
        raise fail(path, "not a GuideLLM benchmark report (a JSON object with its benchmarks)")
    benchmarks = document["benchmarks"]
    if not benchmarks:
        raise fail(path, "the report holds no benchmarks")
    spec = _get(document, "config", "spec") or {}
    data = (spec.get("data") or [{}])[0] if isinstance(spec.get("data"), list) else {}
    tests = [_test(i, b, data if isinstance(data, dict) else {}, path) for i, b in enumerate(benchmarks)]
    backend = spec.get("backend") or _get(benchmarks[0], "config", "backend") or {}
    model_name = text(backend.get("model"), "backend.model", path, 1024) or "?"
    tokenizer = text(_get(spec, "tokenizer", "model"), "tokenizer.model", path, 1024)
    version = text(_get(document, "metadata", "guidellm_version"), "guidellm_version", path, 64)
    target = text(backend.get("target"), "backend.target", path, 2048)
    engine = {"name": "OpenAI-compatible server", "settings": {"mode": "server"},
              "details": {"tool": f"guidellm {version or '?'}", "target": scrub_text(target) if target else None,
                          "request_format": text(backend.get("request_format"), "request_format", path, 256)}}
    created = min(t["started_at"] for t in tests)
    return [imported_run(ORIGIN, "openai", engine, described_model(model_name, Path(model_name).name or model_name,
                                                                     "hf", tokenizer=tokenizer),
                         described_hardware(chip=hardware), tests, file_facts(path, text_, ORIGIN),
                         created_at=created, repetitions=1,
                         status="complete" if any(t["status"] == "ok" for t in tests) else "failed")]
