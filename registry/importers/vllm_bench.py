"""``vllm bench serve --save-result`` JSON (with ``--save-detailed``: per request).

One result file is one pdx run with one serving test, as ``pdx serve-bench``
stores its own: a ``load`` scenario (closed loop at ``max_concurrency`` when
vLLM sent as fast as it could, else open loop at its ``request_rate`` and
``burstiness``), one sample whose time is the file's ``duration``, and with
``--save-detailed`` one request record per request: its send time (from
``start_times``), TTFT, one streamed event per inter-token latency (the last
event carries any tokens the ITLs do not account for), E2EL (``latencies``),
lengths and error. pdx then derives TTFT, TPOT, ITL and E2EL from those
records by vLLM's own definitions, so they agree with the file's figures.

Without ``--save-detailed`` no request has a TTFT, so the file's own
summary figures (mean, median, std and its percentiles of each latency,
throughputs, goodput) are stored as the test's ``reported`` serving figures
and shown flagged as such. The aggregates of either kind are kept in the
test's engine record.
"""

from __future__ import annotations

import re
import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeGuard

from pdx.registry.bundle import fail
from pdx.registry.importers.common import (BIG_MAX, described_hardware, described_model, file_facts, imported_run,
                                           integer, number, numbers, seconds, text)
from pdx.registry.importers.serving_files import load_spec, request_record, serve_test

ORIGIN = "vllm-bench-serve"
_REQUIRED = ("date", "completed", "duration", "total_input_tokens", "total_output_tokens")
_DETAILED = ("input_lens", "output_lens", "ttfts", "itls")
_PER_REQUEST = _DETAILED + ("latencies", "start_times", "queue_times", "generated_texts", "errors")
_METRICS = ("ttft", "tpot", "itl", "e2el")
_PERCENTILE_KEY = re.compile(r"^p(\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
_THROUGHPUTS = ("request_throughput", "output_throughput", "total_token_throughput")


def looks_like(document: object) -> TypeGuard[dict[str, Any]]:
    return isinstance(document, dict) and "total_output_tokens" in document and "duration" in document


def _percentiles(document: dict[str, Any]) -> tuple[float, ...]:
    """The percentiles the file reports (vLLM's --metric-percentiles), with the median's."""
    found = {float(m[1]) for key in document if (m := _PERCENTILE_KEY.match(key)) and 0 < float(m[1]) <= 100}
    return tuple(sorted(found | {50.0}))


def _reported_figures(document: dict[str, Any], source: str | Path) -> dict[str, Any]:
    """The file's own summary, in the shape of :func:`pdx.domain.serving.metrics.serving_stats`."""
    completed = integer(document["completed"], "completed", source)
    failed = integer(document.get("failed") or 0, "failed", source)
    figures: dict[str, Any] = {"requests": completed + failed, "completed": completed, "failed": failed}
    for metric in _METRICS:
        dist = {}
        for key, value in document.items():
            match = _PERCENTILE_KEY.match(key)
            name = f"p{float(match[1]):g}" if match and match[2] == metric else \
                key.split("_")[0] if key in (f"mean_{metric}_ms", f"median_{metric}_ms", f"std_{metric}_ms") else None
            if name and value is not None:
                dist[name] = number(value, key, source)
        if "median" in dist:
            dist.setdefault("p50", dist["median"])  # numpy's median is its 50th percentile
        figures[f"{metric}_ms"] = dist
    for key in _THROUGHPUTS:
        if document.get(key) is not None:
            figures[key] = number(document[key], key, source)
    if document.get("request_goodput") is not None:
        figures["goodput"] = number(document["request_goodput"], "request_goodput", source)
    return figures


def _requests(document: dict[str, Any], source: str | Path) -> list[dict[str, Any]]:
    """One record per request of a --save-detailed file, as pdx's serving client keeps them."""
    lists = {k: document[k] for k in _DETAILED}
    for key in ("latencies", "start_times", "errors"):
        if document.get(key) is not None:
            lists[key] = document[key]
    if not all(isinstance(v, list) for v in lists.values()) or len({len(v) for v in lists.values()}) != 1:
        raise fail(source, f"the per-request lists ({', '.join(lists)}) are malformed or of unequal length")
    starts = numbers(lists["start_times"], "start_times", source, float("-inf")) if "start_times" in lists else None
    first_start = min(starts) if starts else 0.0
    if starts and (max(starts) - first_start) * 1e9 > BIG_MAX:
        raise fail(source, "start_times span longer than any benchmark")
    records = []
    for i in range(len(lists["ttfts"])):
        n_in = integer(lists["input_lens"][i], f"input_lens[{i}]", source)
        n_out = integer(lists["output_lens"][i], f"output_lens[{i}]", source)
        error = text(lists["errors"][i], f"errors[{i}]", source, 4096) if "errors" in lists else None
        send_ns = round((starts[i] - first_start) * 1e9) if starts else 0
        if error:
            records.append(request_record(i, n_in, n_out, send_ns, error=error))
            continue
        ttft = seconds(lists["ttfts"][i], f"ttfts[{i}]", source, positive=True)
        if not isinstance(lists["itls"][i], list):
            raise fail(source, f"itls[{i}] is not a list of inter-token latencies")
        itls = [seconds(v, f"itls[{i}][{j}]", source) for j, v in enumerate(lists["itls"][i])]
        if n_out < len(itls) + 1:
            raise fail(source, f"request {i}: {len(itls)} inter-token latencies for only {n_out} output tokens")
        at = ttft
        events = [[round(ttft * 1e9), 1]]
        for gap in itls:
            at += gap
            events.append([round(at * 1e9), 1])
        events[-1][1] += n_out - len(events)  # tokens that arrived together in the last chunk
        e2el = seconds(lists["latencies"][i], f"latencies[{i}]", source, positive=True) if "latencies" in lists \
            else at
        if at * 1e9 > BIG_MAX:
            raise fail(source, f"request {i}: its tokens arrive after {at:g} s, longer than any benchmark")
        if e2el < at - 1e-6:
            raise fail(source, f"request {i}: its latency {e2el:g} s ends before its last token ({at:g} s)")
        records.append(request_record(i, n_in, n_out, send_ns, n_gen=n_out, first_ns=events[0][0],
                                      end_ns=max(round(e2el * 1e9), events[-1][0]), events=events))
    return records


def _spec(document: dict[str, Any], n_prompt: int, n_gen: int, n_requests: int, source: str | Path) -> dict[str, Any]:
    raw_rate = document.get("request_rate", "inf")
    rate = float("inf") if raw_rate in ("inf", None) else number(raw_rate, "request_rate", source, positive=True)
    cap = integer(document["max_concurrency"], "max_concurrency", source, 1) \
        if document.get("max_concurrency") is not None else None
    burstiness = number(document.get("burstiness", 1.0), "burstiness", source, positive=True)
    closed = rate == float("inf") and cap is not None  # as fast as it could, cap in flight: a closed loop
    return load_spec(source, n_prompt, n_gen, n_requests, concurrency=cap if closed else None,
                     rate=None if closed else rate, burstiness=burstiness, max_concurrency=None if closed else cap,
                     percentiles=_percentiles(document))


def read(path: Path, document: object, text_: str, hardware: str | None = None) -> list[dict[str, Any]]:
    if not isinstance(document, dict):
        raise fail(path, "not a vllm bench serve result (a JSON object)")
    missing = [k for k in _REQUIRED if k not in document]
    if missing:
        raise fail(path, f"lacks {', '.join(missing)}: not a vllm bench serve result")
    return [run_record(path, document, hardware, file_facts(path, text_, "vllm-bench-serve")
                       | {"time_zone": "vLLM writes local time; read as UTC"})]


def run_record(path: Path, document: dict[str, Any], hardware: str | None, provenance: dict[str, Any],
               when: str | None = None, lengths: tuple[int, int] | None = None) -> dict[str, Any]:
    """The run of one result given as the keys of vLLM's result JSON, whichever form it came in: its
    time is ``when`` where given, else the JSON's ``date``; ``lengths`` are the prompt and output lengths
    vLLM was asked for where known, else a test's are its requests' usual ones, or the totals' means."""
    completed = integer(document["completed"], "completed", path)
    failed = integer(document.get("failed") or 0, "failed", path)
    duration = seconds(document["duration"], "duration", path, positive=True)
    total_in = integer(document["total_input_tokens"], "total_input_tokens", path)
    total_out = integer(document["total_output_tokens"], "total_output_tokens", path)
    detailed = all(document.get(k) is not None for k in _DETAILED)
    requests = _requests(document, path) if detailed else []
    ok = [r for r in requests if r["status"] == "ok"]
    if lengths:
        n_in, n_out = lengths
    elif ok:
        n_in = statistics.mode(r["n_prompt"] for r in ok)
        n_out = statistics.mode(r["n_gen"] for r in ok)
    else:
        n_in, n_out = round(total_in / max(completed, 1)), round(total_out / max(completed, 1))
    spec = _spec(document, n_in, n_out, completed + failed, path)
    engine = {k: v for k, v in document.items() if k not in _PER_REQUEST}
    if not requests:
        engine["reported"] = {"serving": _reported_figures(document, path)}
    if when is None:
        try:
            when = datetime.strptime(str(document["date"]), "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc).isoformat()
        except ValueError:
            raise fail(path, f"date {document['date']!r} is not vLLM's YYYYMMDD-HHMMSS") from None
    test = serve_test(0, spec, requests, duration, total_in, total_out, engine, when, completed)
    model_id = text(document.get("model_id"), "model_id", path, 1024) or "?"
    model = described_model(model_id, Path(model_id).name or model_id, "hf",
                            tokenizer=text(document.get("tokenizer_id"), "tokenizer_id", path, 1024))
    return imported_run(
        ORIGIN, "vllm", {"name": "vLLM", "settings": {"mode": "server"},
                         "details": {"endpoint_type": document.get("endpoint_type"), "label": document.get("label")}},
        model, described_hardware(chip=hardware), [test], provenance,
        created_at=when, repetitions=1, status="complete" if completed else "failed",
    )
