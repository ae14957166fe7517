"""Serving figures derived from request records: latency distributions,
throughput and goodput, with vLLM's definitions (``vllm bench serve``).

- TTFT: send to first token. E2EL: send to end. TPOT: (E2EL - TTFT) /
  (tokens - 1) per request.
- ITL: pdx's (and vLLM's) ITL is the *pooled per-gap* distribution: every gap
  between tokens of every request, one population. A chunk carrying k tokens
  counts as k gaps of a k-th of its gap, so servers that merge tokens into
  chunks compare with those that do not; ``chunks_per_token`` says how much
  merging there was. GuideLLM and AIPerf call the *per-request mean gap*
  "ITL": that is pdx's TPOT. Compare their ITL with pdx's TPOT.
- From the schedule (open loop): ``ttft_sched_ms`` and ``e2el_sched_ms``
  count from when the arrival process meant the request to go, so the wait
  for a concurrency slot is latency (coordinated omission left out);
  ``dispatch_ms`` is that wait on its own.
- Request and output-token throughput: completed requests and tokens over the
  makespan (first send to last end).
- Goodput: requests per second that completed and met every SLO given
  (``ttft=500ms,tpot=50ms``; TPOT, ITL and E2EL are judged per request).
"""

from __future__ import annotations

import math
import re
import statistics
from typing import Iterable, Sequence

from pdx.contract.errors import PdxError
from pdx.domain.serving.records import RequestRecord

DEFAULT_PERCENTILES = (50, 90, 95, 99)
SLO_METRICS = ("ttft", "tpot", "itl", "e2el")
_DURATION = re.compile(r"^(?P<value>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>ms|s|us)?$")


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, as vLLM uses)."""
    if not sorted_values:
        return math.nan
    k = (len(sorted_values) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def distribution(values_ns: Iterable[float | None], percentiles: Sequence[float] = DEFAULT_PERCENTILES) -> dict:
    """mean, median, std (population, as numpy), min, max and percentiles, in milliseconds, of the values
    there are (a request a server or an imported file did not time has None: it is not a zero)."""
    values = sorted(v / 1e6 for v in values_ns if v is not None)
    if not values:
        return {"n": 0}
    out = {
        "n": len(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "std": statistics.pstdev(values),
        "min": values[0],
        "max": values[-1],
    }
    for p in percentiles:
        out[f"p{p:g}"] = percentile(values, p)
    return out


def parse_slo(text: str | None) -> dict[str, float]:
    """``ttft=500ms,tpot=50ms`` -> {"ttft": 500.0, "tpot": 50.0} (milliseconds)."""
    if not text:
        return {}
    slo = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key, value = key.strip().lower(), value.strip().lower()
        match = _DURATION.match(value)
        if not sep or key not in SLO_METRICS or not match:
            raise PdxError(f"--slo: cannot read {item.strip()!r}",
                           "give METRIC=DURATION pairs, e.g. ttft=500ms,tpot=50ms (metrics: ttft, tpot, itl, e2el)")
        scale = {"s": 1000.0, "ms": 1.0, "us": 0.001, None: 1.0}[match["unit"]]
        slo[key] = float(match["value"]) * scale
    return slo


def parse_percentiles(text: str | None) -> tuple[float, ...]:
    if not text:
        return DEFAULT_PERCENTILES
    try:
        values = tuple(float(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise PdxError(f"--percentiles {text}: give numbers such as 50,90,99") from None
    if not values or any(not 0 < p <= 100 for p in values):
        raise PdxError(f"--percentiles {text}: each must be above 0 and at most 100")
    return values


def meets_slo(record: RequestRecord, slo: dict[str, float]) -> bool:
    if not record.ok:
        return False
    figures: dict[str, Sequence[float | None]] = {  # from the schedule: a user who waited for a slot waited
        "ttft": [record.ttft_sched_ns],
        "tpot": [record.tpot_ns] if record.tpot_ns is not None else [],
        "itl": record.itl_ns,
        "e2el": [record.e2el_sched_ns],
    }
    return all(all(v is not None and v / 1e6 <= limit for v in figures[key]) for key, limit in slo.items())


def decode_rate(record: RequestRecord) -> float | None:
    """One stream's decode rate: tokens after the first over the time they took."""
    decode = record.decode_ns
    if not record.ok or not decode:
        return None
    return (record.n_gen - record.events[0][1]) * 1e9 / decode


def reasoning_stats(ok: Sequence[RequestRecord]) -> dict:
    """A reasoning model's two phases over the completed requests: how many thought, the thinking and
    answer tokens, and each phase's per-stream rate, mean (:class:`RequestRecord`'s definitions)."""
    thought = [r for r in ok if r.n_reasoning]
    thinking = [x for x in (r.reasoning_rate for r in thought) if x]
    answer = [x for x in (r.answer_rate for r in thought) if x]
    return {"requests": len(thought), "reasoning_tokens": sum(r.n_reasoning for r in thought),
            "answer_tokens": sum(r.n_answer for r in ok),
            "reasoning_rate": statistics.fmean(thinking) if thinking else None,
            "answer_rate": statistics.fmean(answer) if answer else None}


def serving_stats(records: Sequence[RequestRecord], makespan_ns: int, slo: dict[str, float] | None = None,
                  percentiles: Sequence[float] = DEFAULT_PERCENTILES) -> dict:
    """Everything ``vllm bench serve`` reports, from pdx's own records."""
    ok = [r for r in records if r.ok]
    seconds = makespan_ns / 1e9 if makespan_ns else None
    rates = [rate for rate in map(decode_rate, ok) if rate]
    output_tokens = sum(r.n_gen for r in ok)
    stats = {
        "requests": len(records),
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "duration_s": seconds,
        "prompt_tokens": sum(r.n_prompt for r in ok),
        "output_tokens": output_tokens,
        "request_throughput": len(ok) / seconds if seconds else None,
        "output_throughput": output_tokens / seconds if seconds else None,
        "total_token_throughput": sum(r.n_gen + r.n_prompt for r in ok) / seconds if seconds else None,
        "per_stream_decode_rate": statistics.fmean(rates) if rates else None,
        "ttft_ms": distribution((r.first_ns for r in ok), percentiles),
        "tpot_ms": distribution((r.tpot_ns for r in ok), percentiles),
        "itl_ms": distribution((gap for r in ok for gap in r.itl_ns), percentiles),
        "e2el_ms": distribution((r.end_ns for r in ok), percentiles),
    }
    chunks = sum(len(r.events) for r in ok)
    stats["chunks_per_token"] = chunks / output_tokens if output_tokens else None
    if any(r.scheduled_ns is not None for r in records):
        stats["ttft_sched_ms"] = distribution((r.ttft_sched_ns for r in ok), percentiles)
        stats["e2el_sched_ms"] = distribution((r.e2el_sched_ns for r in ok), percentiles)
        stats["dispatch_ms"] = distribution((r.dispatch_ns for r in records), percentiles)
    if any(r.n_reasoning for r in ok):
        stats["ttfat_ms"] = distribution((r.ttfat_ns for r in ok), percentiles)
        stats["reasoning"] = reasoning_stats(ok)
    if slo:
        good = sum(meets_slo(r, slo) for r in ok)
        stats["slo"] = dict(slo)
        stats["good_requests"] = good
        stats["goodput"] = good / seconds if seconds else None
    return stats


def concurrency_knee(points: Sequence[tuple[int, float]], efficiency: float = 0.5) -> int | None:
    """The concurrency past which adding streams stops paying: the first point from
    which the next one's aggregate rate grew by less than ``efficiency`` of linear
    scaling. ``points`` are (concurrency, aggregate tokens/s), ascending; None when
    the sweep never bends that far."""
    for (c0, r0), (c1, r1) in zip(points, points[1:]):
        if r0 > 0 and c1 > c0 and (r1 / r0 - 1) / (c1 / c0 - 1) < efficiency:
            return c0
    return None
