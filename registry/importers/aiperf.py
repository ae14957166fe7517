"""AIPerf's profile export: ``profile_export_aiperf.json``, with the per-request
``profile_export.jsonl`` that AIPerf writes beside it.

One export is one pdx run with one serving test, a ``load`` test as ``pdx
serve-bench`` stores its own: an open loop at the profiling phase's request
rate (capped by its concurrency), or a closed loop at its concurrency when it
set no rate. One sample spans ``benchmark_duration``.

With the JSONL beside the export (the same name with ``.jsonl``, or AIPerf's
own ``profile_export.jsonl`` in the same folder), each line becomes a pdx
request record: the send time (``request_start_ns``), the time its credit
was issued as the scheduled time of an open loop, TTFT, one streamed event per
chunk (``inter_chunk_latency``, the last carrying the tokens the chunks do not
account for), the end, the server's token counts where AIPerf kept them
(``usage_*``; else its own re-tokenised counts) and the error. AIPerf's
``inter_token_latency`` is each request's mean gap, what pdx calls TPOT.
AIPerf's own summary of every metric is kept in the test's engine record
(``reported_by_tool``); without the JSONL it is the test's ``reported``
serving figures, flagged as such.
"""

from __future__ import annotations

import json
import statistics
from datetime import datetime, timezone
from pathlib import Path

from pdx.registry import bundle
from pdx.registry.bundle import fail
from pdx.registry.importers.common import (BIG_MAX, described_hardware, described_model, file_facts, imported_run,
                                           integer, number, text)
from pdx.registry.importers.serving_files import load_spec, request_record, serve_test
from pdx.base.secrets import scrub_text

ORIGIN = "aiperf"
JSON_NAME = "profile_export_aiperf.json"
JSONL_NAME = "profile_export.jsonl"
JSONL_LIMIT = 256 * 2**20
SCHEMA_MAJOR = 1  # AIPerf's export schema_version is MAJOR.MINOR; pdx reads 1.x (and an export without one)
_TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "sec": 1e9, "s": 1e9}
_STATS = {"avg": "mean", "std": "std", "min": "min", "max": "max", "p50": "median"}
# AIPerf's metrics -> pdx's serving figures: its ITL is a request's mean gap, pdx's TPOT.
_MAPPED = {"time_to_first_token": "ttft_ms", "inter_token_latency": "tpot_ms", "request_latency": "e2el_ms"}
_KEPT = ("time_to_first_token", "time_to_second_token", "inter_token_latency", "inter_chunk_latency",
         "request_latency", "request_throughput", "output_token_throughput", "input_sequence_length",
         "output_sequence_length", "usage_prompt_tokens", "usage_completion_tokens", "effective_concurrency")


def looks_like(document: object) -> bool:
    return isinstance(document, dict) and "aiperf_version" in document and "input_config" in document


def looks_like_records(text_: str) -> bool:
    """AIPerf's per-request JSONL: lines of {"metadata": {... "request_start_ns"}, "metrics": {...}}."""
    first = next((line for line in text_.splitlines() if line.strip()), "")
    try:
        line = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(line, dict) and isinstance(line.get("metadata"), dict) and \
        "request_start_ns" in line["metadata"] and isinstance(line.get("metrics"), dict)


def read_records(path: Path, hardware: str | None = None) -> list[dict]:
    """The per-request JSONL named: the run of the export beside it (the same import as of the export)."""
    path = Path(path)
    for candidate in (path.with_suffix(".json"), path.parent / JSON_NAME):
        if candidate.is_file():
            if candidate.stat().st_size > JSONL_LIMIT:  # the export beside it is a boundary input too
                raise fail(candidate, f"over {JSONL_LIMIT // 2**20} MiB: too large to be an AIPerf export")
            text_ = bundle.read_text(candidate)
            return read(candidate, bundle.parse_json(text_, str(candidate)), text_, hardware)
    raise fail(path, f"AIPerf's per-request records without their export: import the {JSON_NAME} they came with "
                     "(the test's load and duration are there), with this file beside it")


def _get(document: object, *keys):
    for key in keys:
        document = document.get(key) if isinstance(document, dict) else \
            document[key] if isinstance(document, list) and isinstance(key, int) and len(document) > key else None
    return document


def _summary(metric: object, what: str, source) -> dict:
    """One metric's statistics under pdx's names (times in ms)."""
    if not isinstance(metric, dict):
        return {}
    unit = metric.get("unit")
    scale = _TO_NS[unit] / 1e6 if unit in _TO_NS else 1.0
    out = {}
    for key, value in metric.items():
        name = _STATS.get(key, key if key.startswith("p") and key[1:].replace(".", "").isdigit() else None)
        if name and value is not None:
            out[name] = number(value, f"{what}.{key}", source, float("-inf")) * scale
        if key == "p50" and value is not None:
            out["p50"] = out["median"]
    return out | ({"unit": "ms" if unit in _TO_NS else unit} if unit else {})


def _ns(metrics: dict, key: str, where: str, source) -> int | None:
    entry = metrics.get(key)
    if entry is None:
        return None
    unit = entry.get("unit") if isinstance(entry, dict) else None
    if unit not in _TO_NS:
        raise fail(source, f"{where} {key}: unit {unit!r} is not a time unit")
    value = number(entry.get("value"), f"{where} {key}", source) * _TO_NS[unit]
    if value > BIG_MAX:
        raise fail(source, f"{where} {key} is longer than any benchmark")
    return round(value)


def _tokens(metrics: dict, keys: tuple[str, ...], where: str, source) -> int | None:
    for key in keys:
        if isinstance(metrics.get(key), dict) and metrics[key].get("value") is not None:
            return integer(metrics[key]["value"], f"{where} {key}", source)
    return None


def _epoch_ns(value: object, what: str, source) -> int:
    """An epoch time in integer nanoseconds (beyond the float range the other converters check)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise fail(source, f"{what} is {value!r:.40}, not a time in nanoseconds since 1970")
    return value


def _request(idx: int, line: object, t0: int, open_loop: bool, n_out_planned: int, source) -> dict:
    where = f"record {idx}"
    metadata, metrics = _get(line, "metadata") or {}, _get(line, "metrics") or {}
    if not isinstance(metadata, dict) or not isinstance(metrics, dict):
        raise fail(source, f"{where} is not an AIPerf record (metadata and metrics)")
    send_ns = _epoch_ns(metadata.get("request_start_ns"), f"{where} request_start_ns", source) - t0
    issued = metadata.get("credit_issued_ns")
    scheduled_ns = _epoch_ns(issued, f"{where} credit_issued_ns", source) - t0 \
        if open_loop and issued is not None else None
    if send_ns > BIG_MAX or (scheduled_ns or 0) > BIG_MAX:
        raise fail(source, f"{where} starts later than any benchmark lasts")
    n_in = _tokens(metrics, ("usage_prompt_tokens", "input_sequence_length"), where, source) or 0
    n_out = _tokens(metrics, ("usage_completion_tokens", "output_sequence_length"), where, source)
    usage = {"prompt_tokens": n_in, "completion_tokens": n_out,
             "cached_tokens": _tokens(metrics, ("usage_prompt_cache_read_tokens",), where, source)}
    error = line.get("error") if isinstance(line, dict) else None
    if error is not None or metadata.get("was_cancelled"):
        message = text(error.get("message") if isinstance(error, dict) else str(error), f"{where} error",
                       source, 4096) if error is not None else "cancelled"
        return request_record(idx, n_in, n_out or n_out_planned, send_ns, scheduled_ns=scheduled_ns,
                              error=message or "failed", usage=usage)
    ttft = _ns(metrics, "time_to_first_token", where, source)
    latency = _ns(metrics, "request_latency", where, source)
    if ttft is None or latency is None or n_out is None:
        raise fail(source, f"{where}: no time_to_first_token, request_latency or output token count")
    gaps = (metrics.get("inter_chunk_latency") or {}).get("value") or []
    if not isinstance(gaps, list):
        raise fail(source, f"{where} inter_chunk_latency is not a list")
    scale = _TO_NS.get(metrics["inter_chunk_latency"].get("unit"), 1e6) if gaps else 1e6
    events, at = [[ttft, 1]], ttft
    for j, gap in enumerate(gaps[:max(n_out - 1, 0)]):
        at += round(number(gap, f"{where} inter_chunk_latency[{j}]", source) * scale)
        events.append([at, 1])
    events[-1][1] += max(n_out, 1) - len(events)  # tokens the chunks do not account for came with the last
    if at > latency + 1e6:  # a millisecond of rounding in AIPerf's own figures, no more
        raise fail(source, f"{where}: its chunks arrive after its end ({at} ns > {latency} ns)")
    return request_record(idx, n_in, n_out, send_ns, n_gen=n_out, first_ns=ttft, end_ns=max(latency, at),
                          events=events, usage=usage, scheduled_ns=scheduled_ns)


def _jsonl(path: Path) -> tuple[Path, list] | None:
    for candidate in (path.with_suffix(".jsonl"), path.parent / JSONL_NAME):
        if candidate.is_file():
            if candidate.stat().st_size > JSONL_LIMIT:
                raise fail(candidate, f"over {JSONL_LIMIT // 2**20} MiB: too large to be an AIPerf record file")

            lines = []
            text_ = candidate.read_text(errors="replace").removeprefix("\ufeff")  # a byte-order mark is no text
            for number_, raw in enumerate(text_.splitlines(), 1):
                if raw.strip():
                    try:
                        lines.append(bundle.loads(raw))
                    except bundle.DuplicateKey as exc:
                        raise fail(candidate, f"line {number_} names {exc.key[:40]!r} twice, and readers differ "
                                              "on which value counts") from None
                    except (ValueError, RecursionError) as exc:
                        raise fail(candidate, f"line {number_} is not JSON ({exc})") from None
            return candidate, lines
    return None


def _known_schema(version: object, source) -> None:
    """Refuse an export of a schema pdx does not know: a later major version may mean its fields otherwise."""
    if version is None:
        return  # AIPerf before it wrote one
    major = str(version).strip().split(".")[0] if isinstance(version, (str, int, float)) else ""
    if not (major.isascii() and major.isdigit()):
        raise fail(source, f"schema_version {_shown(version)} is no AIPerf schema version pdx knows "
                           f"({SCHEMA_MAJOR}.x)")
    if int(major) > SCHEMA_MAJOR:
        raise fail(source, f"AIPerf export schema version {_shown(version)} is newer than pdx reads ({SCHEMA_MAJOR}.x)",
                   "upgrade pdx, or export with an AIPerf that writes schema 1.x")


def _shown(value: object) -> str:
    return repr(value) if len(repr(value)) <= 24 else repr(value)[:21] + "..."


def read(path: Path, document: object, text_: str, hardware: str | None = None) -> list[dict]:
    path = Path(path)
    if not looks_like(document):
        raise fail(path, "not an AIPerf profile export (a JSON object with aiperf_version and input_config)")
    _known_schema(document.get("schema_version"), path)
    config = document["input_config"] if isinstance(document["input_config"], dict) else {}
    phase = next((p for p in config.get("phases") or [] if isinstance(p, dict) and p.get("kind") == "profiling"),
                 _get(config, "phases", 0) or {})
    rate = number(phase["rate"], "phases.rate", path, positive=True) if phase.get("rate") is not None else None
    cap = integer(phase["concurrency"], "phases.concurrency", path, 1) if phase.get("concurrency") is not None else None
    if rate is None and cap is None:
        raise fail(path, "its profiling phase sets neither a request rate nor a concurrency")
    prompts = _get(config, "datasets", 0, "prompts") or {}
    n_in_planned = round(number(_get(prompts, "isl", "mean") or 1, "isl.mean", path))
    n_out_planned = round(number(_get(prompts, "osl", "mean") or 1, "osl.mean", path))
    records = _jsonl(path)
    lines = [line for line in (records[1] if records else [])
             if (_get(line, "metadata", "benchmark_phase") or "profiling") == "profiling"]
    # Times from the earliest send or credit: an open loop's first credit can come before its first send.
    starts = [_get(line, "metadata", key) for line in lines for key in ("request_start_ns", "credit_issued_ns")]
    t0 = min((s for s in starts if isinstance(s, int) and not isinstance(s, bool) and s > 0), default=0)
    requests = [_request(i, line, t0, rate is not None, n_out_planned, records[0]) for i, line in enumerate(lines)]
    ok = [r for r in requests if r["status"] == "ok"]
    n_in = statistics.mode(r["n_prompt"] for r in ok) if ok else n_in_planned
    n_out = statistics.mode(r["n_gen"] for r in ok) if ok else n_out_planned
    n_requests = integer(phase.get("requests") or len(requests) or 1, "phases.requests", path)
    spec = load_spec(path, n_in, n_out, n_requests, concurrency=cap if rate is None else None, rate=rate,
                     max_concurrency=cap if rate is not None else None)
    kept = {key: _summary(document.get(key), key, path) for key in _KEPT if key in document}
    engine = {"phase": {k: v for k, v in phase.items() if isinstance(v, (str, int, float, bool))},
              "reported_by_tool": kept, "use_server_token_count": bool(_get(config, "endpoint",
                                                                                "use_server_token_count"))}
    completed = integer(_get(document, "completed_request_count", "avg") or len(ok), "completed_request_count", path)
    if not requests:
        engine["reported"] = {"serving": {
            "requests": integer(_get(document, "request_count", "avg") or completed, "request_count", path),
            "completed": completed, "failed": integer(_get(document, "error_request_count", "avg") or 0,
                                                      "error_request_count", path),
            **{name: _summary(document.get(key), key, path) for key, name in _MAPPED.items()},
            "request_throughput": number(_get(document, "request_throughput", "avg") or 0, "request_throughput", path),
            "output_throughput": number(_get(document, "output_token_throughput", "avg") or 0,
                                        "output_token_throughput", path)}}
    duration_s = number(_get(document, "benchmark_duration", "avg"), "benchmark_duration", path, positive=True) * \
        _TO_NS.get(_get(document, "benchmark_duration", "unit") or "sec", 1e9) / 1e9
    try:
        when = datetime.fromisoformat(str(document.get("start_time"))).replace(tzinfo=timezone.utc).isoformat()
    except ValueError:
        raise fail(path, f"start_time {document.get('start_time')!r} is not an ISO 8601 time") from None
    test = serve_test(0, spec, requests, duration_s, sum(r["n_prompt"] for r in ok), sum(r["n_gen"] for r in ok),
                      engine, when, completed)
    model_name = text(_get(config, "models", "items", 0, "name"), "models.items[0].name", path, 1024) or "?"
    url = text(_get(config, "endpoint", "urls", 0), "endpoint.urls[0]", path, 2048)
    version = text(document.get("aiperf_version"), "aiperf_version", path, 64)
    provenance = file_facts(path, text_, ORIGIN) | {"time_zone": "AIPerf writes local time; read as UTC"}
    if records:
        provenance["records_file"] = str(records[0])
    return [imported_run(
        ORIGIN, "openai", {"name": "OpenAI-compatible server", "settings": {"mode": "server"},
                           "details": {"tool": f"aiperf {version}", "target": scrub_text(url) if url else None,
                                       "endpoint_type": text(_get(config, "endpoint", "type"), "endpoint.type", path,
                                                             64)}},
        described_model(model_name, Path(model_name).name or model_name, "hf",
                        tokenizer=text(_get(config, "tokenizer", "name"), "tokenizer.name", path, 1024)),
        described_hardware(chip=hardware), [test], provenance, created_at=when, repetitions=1,
        status="complete" if completed else "failed")]
