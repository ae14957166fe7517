"""What the importers of serving tools' files (vllm bench serve, GuideLLM,
AIPerf) share: the ``load`` spec of a test as ``pdx serve-bench`` stores its
own, one request record in the shape pdx's serving client keeps, and the test
around them. Every value reaching these has been through the converters of
:mod:`pdx.registry.importers.common`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdx.contract.errors import PdxError
from pdx.registry.bundle import fail
from pdx.contract import build, record
from pdx.registry.importers.common import make_test
from pdx.domain.serving.metrics import DEFAULT_PERCENTILES
from pdx.domain.serving.spec import ServeSpec


def load_spec(source: str | Path, n_prompt: int, n_gen: int, n_requests: int, concurrency: int | None = None,
              rate: float | None = None, burstiness: float = 1.0, max_concurrency: int | None = None,
              percentiles: tuple[float, ...] = DEFAULT_PERCENTILES) -> dict[str, Any]:
    """A closed loop at ``concurrency`` or an open loop at ``rate`` (inf: all at once), as pdx's own."""
    try:
        spec = ServeSpec("load", max(n_prompt, 1), max(n_gen, 1), concurrency=concurrency, rate=rate,
                         burstiness=burstiness, max_concurrency=max_concurrency, n_requests=max(n_requests, 1),
                         warmup_requests=0, percentiles=percentiles)
    except PdxError as exc:
        raise fail(source, str(exc)) from None
    return spec.to_dict()


def request_record(idx: int, n_prompt: int, max_tokens: int, send_ns: int, *, n_gen: int = 0,
                   first_ns: int | None = None, end_ns: int | None = None, events: list[Any] | None = None,
                   error: str | None = None, usage: dict[str, Any] | None = None, scheduled_ns: int | None = None,
                   finish_reason: str | None = None) -> dict[str, Any]:
    """One request as pdx's serving client records it (times in ns from the test's first send)."""
    record = {"sample_idx": 0, "idx": idx, "role": "load", "n_prompt": n_prompt, "max_tokens": max_tokens,
              "n_gen": n_gen, "send_ns": send_ns, "first_ns": first_ns, "end_ns": end_ns,
              "status": "error" if error else "ok", "error": error, "http_status": None,
              "finish_reason": finish_reason, "events": events or [], "usage": usage or {}, "engine": {}}
    # Only where the tool knew it: a record read as it was before the field existed keeps its old digest.
    return record | ({"scheduled_ns": scheduled_ns} if scheduled_ns is not None else {})


def stream_events(first_ns: int, last_ns: int, n_gen: int) -> list[list[int]]:
    """A stream known by its first and last token only: the first token, then the rest together at the
    last one (so the pooled ITL is the request's mean gap, as the tool timed it)."""
    if n_gen <= 1 or last_ns <= first_ns:
        return [[first_ns, max(n_gen, 1)]]
    return [[first_ns, 1], [last_ns, n_gen - 1]]


def serve_test(ordinal: int, spec: dict[str, Any], requests: list[dict[str, Any]], duration_s: float, total_in: int,
               total_out: int, engine: dict[str, Any], when: str | None, completed: int | None = None) -> record.Test:
    """The serving test of a tool's benchmark: one sample over its duration, its requests, failed when
    none completed (``completed``: the tool's count, where it kept no requests) and carrying the first
    failure otherwise."""
    failures = [r["error"] for r in requests if r["status"] != "ok"]
    completed = len(requests) - len(failures) if completed is None else completed
    error = f"{len(failures)} of {len(requests)} requests failed: {failures[0][:200]}" if failures else None
    return make_test(ordinal, Shape(spec), [build.sample(max(1, round(duration_s * 1e9)), total_in, total_out)],
                     engine, when, status="ok" if completed else "failed", error=error, spec=spec, requests=requests)


class Shape:
    """The fields :func:`make_test` reads, from a serving spec's dict."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.name, self.kind, self.depth, self.batch = spec["name"], "serve", 0, spec["batch"]
        self.n_prompt, self.n_gen = spec["n_prompt"], spec["n_gen"]
