"""Figures derived from a stored test's samples: rates and their statistics, a serving test's
latencies and throughput, speculation, energy. Pure: a test record in, its ``stats`` out; the
registry's readers (:mod:`pdx.reports.results`) add them to what they read.

A rate is tokens / time for each repetition (llama-bench's samples_ts), then
summarised; for ``pp+tg`` tests the two phases are also rated on their own
when the backend timed them apart.

Noise flags ride along: the coefficient of variation of the rate, and the
indices of outlier samples (Tukey's fences on the sample times), which are
marked and never dropped. A test imported from a tool that kept only a
summary (llama-bench's SQL output) has no samples: its stats are the tool's
own ``reported`` figures, flagged as such.
"""

from __future__ import annotations

from typing import Any, Mapping

from pdx.contract.backend import FIGURES as SAMPLE_FIGURES
from pdx.domain.energy.figures import energy_stats
from pdx.domain.serving.analysis import cache_claim, client_stats, stall_stats, turn_stats
from pdx.domain.serving.metrics import serving_stats
from pdx.domain.serving.overhead import overhead_stats
from pdx.domain.serving.records import RequestRecord
from pdx.domain.serving.server_series import series_summary
from pdx.domain.speculation import speculation_stats
from pdx.domain.stats import outliers, rates, summarize
from pdx.domain.workload import repetition_tokens


def _records(test: Mapping[str, Any]) -> list:
    return [RequestRecord.from_dict(r) for r in test.get("requests") or []]


def serve_stats(test: Mapping[str, Any]) -> dict | None:
    """A serving test: latency distributions and throughput from its requests."""
    spec, records = test.get("spec") or {}, _records(test)
    if not records:  # an import that kept only its tool's summary (vllm bench serve without --save-detailed)
        reported = ((test.get("engine") or {}).get("reported") or {}).get("serving")
        return _reported_serving(reported) if reported else None
    makespan = sum(s["ns"] for s in test.get("samples") or [])
    stats = serving_stats(records, makespan, spec.get("slo"), spec.get("percentiles") or (50, 90, 95, 99))
    if spec.get("scenario") == "stall":
        stats["stall"] = stall_stats(records)
    if spec.get("scenario") == "overhead":
        stats["overhead"] = overhead_stats(records, test.get("samples") or [])
    turns = turn_stats(records)
    if turns:
        stats["turns"] = turns
    claim = cache_claim(spec, (test.get("engine") or {}).get("server"), len(records) + spec.get("warmup_requests", 0))
    if claim:
        stats["prefix_cache"] = claim
    found = [s["engine"]["capacity"] for s in test.get("samples") or [] if (s.get("engine") or {}).get("capacity")]
    if found:
        stats["capacity"] = found[0] if len(found) == 1 else dict(found[0], repeats=found)
    clients = client_stats(test.get("samples") or [])
    if clients:
        stats["clients"] = clients
    series = [s["engine"]["server_series"] for s in test.get("samples") or []
              if isinstance((s.get("engine") or {}).get("server_series"), dict)]
    if series:
        stats["server_series"] = series_summary(series)
    stopped = [s["engine"]["saturation"] for s in test.get("samples") or []
               if (s.get("engine") or {}).get("saturation")]
    if stopped:
        stats["saturation"] = dict(stopped[0], samples_stopped=len(stopped))  # the first that stopped early
    return stats


def _reported_serving(reported: dict) -> dict:
    """A tool's own serving summary in :func:`serving_stats`' shape, flagged as reported."""
    stats: dict[str, object] = {
        "requests": None, "completed": None, "failed": None, "duration_s": None, "prompt_tokens": None,
        "output_tokens": None, "request_throughput": None, "output_throughput": None,
        "total_token_throughput": None, "per_stream_decode_rate": None,
        **{f"{m}_ms": {} for m in ("ttft", "tpot", "itl", "e2el")}}
    return stats | reported | {"reported": True}


def derive_stats(test: Mapping[str, Any]) -> dict | None:
    stats = _derive(test)
    energy = energy_stats(test)
    if energy and stats is not None:
        stats["energy"] = energy
    figures = figure_stats(test)
    if figures and stats is not None:
        stats["figures"] = figures
    return stats


def figure_stats(test: Mapping[str, Any]) -> dict | None:
    """Each number a sample's record declares beyond its time and counts (:data:`pdx.contract.backend.FIGURES`),
    summarised over the samples that have it; None where no sample has any."""
    found = {}
    for figure in SAMPLE_FIGURES:
        values = [s.get(figure.name) for s in test.get("samples") or []]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if numbers and figure.kind in (int, float):
            found[figure.name] = summarize(numbers).to_dict()
    return found or None


def _derive(test: Mapping[str, Any]) -> dict | None:
    if test.get("kind") == "serve":
        return serve_stats(test)
    samples = test.get("samples") or []
    batch = test.get("batch", 1)
    tokens = repetition_tokens(test)
    if not samples:
        return _reported(test, tokens, batch)
    times = [s["ns"] for s in samples]
    rate = summarize(rates(tokens, times))
    stats = {
        "tokens": tokens,
        "rate": rate.to_dict(),
        "ns": summarize(times).to_dict(),
        "per_sequence_rate": rate.mean / batch,
        "cv": rate.cv,
        "outliers": outliers(times),
    }
    if test["kind"] == "pg" and all(s.get("prompt_ns") and s.get("gen_ns") for s in samples):
        stats["prompt_rate"] = summarize(rates(test["n_prompt"] * batch, [s["prompt_ns"] for s in samples])).to_dict()
        stats["gen_rate"] = summarize(rates(test["n_gen"] * batch, [s["gen_ns"] for s in samples])).to_dict()
    if test.get("requests"):  # over HTTP: the latencies behind the rates

        latency = serving_stats(_records(test), sum(s["ns"] for s in samples))
        stats["serving"] = {k: latency[k] for k in ("requests", "failed", "ttft_ms", "itl_ms", "tpot_ms", "e2el_ms")}
    if test["kind"] != "pp" and (speculation := speculation_stats(test)):
        stats["speculation"] = speculation
    return stats


def _reported(test: Mapping[str, Any], tokens: int, batch: int) -> dict | None:
    """Stats of a sample-less imported test: the summary its tool reported."""
    reported = (test.get("engine") or {}).get("reported")
    if not reported:
        return None
    mean, stddev = reported["mean"], reported.get("stddev")
    rate = {"n": reported.get("n"), "mean": mean, "stddev": stddev, "median": None, "min": None,
            "max": None, "ci95": None}
    return {"tokens": tokens, "rate": rate, "ns": None, "per_sequence_rate": mean / batch,
            "cv": stddev / mean if stddev is not None and mean else None, "outliers": [], "reported": True}


def with_stats(run: Mapping[str, Any], keep_samples: bool = True) -> dict[str, Any]:
    """The run with ``stats`` added to each test (samples dropped unless kept)."""
    tests = []
    for test in run["tests"]:
        shown = dict(test) | {"stats": derive_stats(test)}
        if not keep_samples:
            shown.pop("samples", None)
            shown.pop("requests", None)
        tests.append(shown)
    return dict(run) | {"tests": tests}
