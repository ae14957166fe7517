"""``vllm bench serve --save-result`` JSON (with ``--save-detailed``: per request).

One result file is one pdx run with one test, named by the request shape:
``pp{input}+tg{output}`` (the most common lengths; they are all equal for
the random dataset with ignore-EOS, vLLM's default there). With
``--save-detailed`` every successful request becomes a sample: ``ns`` its
end-to-end latency, ``prompt_ns`` its TTFT, ``gen_ns`` the rest, and its
inter-token latencies beside it; so pdx's per-phase rates are prefill from
TTFT and decode from the remainder, client-side, as vLLM measured them.
Without it only the aggregates exist: they are kept in the test's engine
record, and the per-request rate from the mean E2EL is its ``reported`` figure.
"""

from __future__ import annotations

import statistics
from datetime import datetime
from pathlib import Path

from pdx.registry.bundle import fail
from pdx.registry.importers.common import described_hardware, described_model, file_facts, imported_run
from pdx.registry.importers.common import make_test, sample
from pdx.workload import TestSpec

ORIGIN = "vllm-bench-serve"
_REQUIRED = ("date", "completed", "duration", "total_input_tokens", "total_output_tokens")
_DETAILED = ("input_lens", "output_lens", "ttfts", "itls")


def looks_like(document: object) -> bool:
    return isinstance(document, dict) and "total_output_tokens" in document and "duration" in document


def _number(result: dict, key: str, source) -> float:
    value = result[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(source, f"{key} is not a number")
    return value


def _e2el_from_phases(document: dict, n_out: int) -> float | None:
    """Mean end-to-end latency from mean TTFT and TPOT (vLLM reports E2EL only when asked)."""
    ttft, tpot = document.get("mean_ttft_ms"), document.get("mean_tpot_ms")
    if not isinstance(ttft, (int, float)) or not isinstance(tpot, (int, float)):
        return None
    return ttft + tpot * max(n_out - 1, 0)


def _samples(result: dict, source) -> tuple[list[dict], list[str]]:
    lists = [result[k] for k in _DETAILED]
    if not all(isinstance(v, list) for v in lists) or len({len(v) for v in lists}) != 1:
        raise fail(source, f"the per-request lists ({', '.join(_DETAILED)}) are malformed or of unequal length")
    latencies = result.get("latencies")
    errors = result.get("errors") or [""] * len(lists[0])
    samples, failures = [], []
    for i, (n_in, n_out, ttft, itls) in enumerate(zip(*lists)):
        if errors[i] if i < len(errors) else False:
            failures.append(str(errors[i]))
            continue
        if not (isinstance(ttft, (int, float)) and ttft > 0 and isinstance(itls, list)):
            raise fail(source, f"request {i} has a malformed ttft or itls")
        e2el = latencies[i] if isinstance(latencies, list) and i < len(latencies) else ttft + sum(itls)
        samples.append(sample(e2el * 1e9, int(n_in), int(n_out), ttft * 1e9, (e2el - ttft) * 1e9,
                              engine={"itls_s": itls}))
    return samples, failures


def read(path: Path, document: object, text: str) -> list[dict]:
    if not isinstance(document, dict):
        raise fail(path, "not a vllm bench serve result (a JSON object)")
    missing = [k for k in _REQUIRED if k not in document]
    if missing:
        raise fail(path, f"lacks {', '.join(missing)}: not a vllm bench serve result")
    completed = int(_number(document, "completed", path))
    detailed = all(k in document for k in _DETAILED)
    samples, failures = _samples(document, path) if detailed else ([], [])
    if samples:
        n_in = statistics.mode(s["n_prompt"] for s in samples)
        n_out = statistics.mode(s["n_gen"] for s in samples)
    else:
        n_in = round(_number(document, "total_input_tokens", path) / max(completed, 1))
        n_out = round(_number(document, "total_output_tokens", path) / max(completed, 1))
    try:
        spec = TestSpec(n_in, n_out)
    except Exception as exc:
        raise fail(path, str(exc)) from None
    engine = {k: v for k, v in document.items() if k not in _DETAILED + ("latencies", "start_times", "queue_times",
                                                                           "generated_texts", "errors")}
    e2el_ms = document.get("mean_e2el_ms") or _e2el_from_phases(document, n_out)
    if not samples and e2el_ms:
        engine["reported"] = {"mean": (n_in + n_out) / (e2el_ms / 1000), "stddev": None, "n": completed}
    try:
        when = datetime.strptime(str(document["date"]), "%Y%m%d-%H%M%S").isoformat() + "+00:00"
    except ValueError:
        raise fail(path, f"date {document['date']!r} is not vLLM's YYYYMMDD-HHMMSS") from None
    status = "ok" if completed else "failed"
    error = f"{len(failures)} requests failed, first: {failures[0][:200]}" if failures else None
    test = make_test(0, spec, samples, engine, when, status=status, error=error)
    model_id = str(document.get("model_id") or "?")
    model = described_model(model_id, Path(model_id).name or model_id, "hf", tokenizer=document.get("tokenizer_id"))
    return [imported_run(
        ORIGIN, "vllm", {"name": "vLLM", "details": {"endpoint_type": document.get("endpoint_type"),
                                                      "label": document.get("label")}},
        model, described_hardware(), [test],
        file_facts(path, text, "vllm-bench-serve") | {"time_zone": "vLLM writes local time; read as UTC"},
        created_at=when, repetitions=completed, status="complete" if completed else "failed",
    )]
