"""Scenario figures that need more than one request's record.

- stall: the steady streams' (``steady``) inter-token gaps while a long
  prompt (``intruder``) is prefilled, against their gaps before it arrived.
- sweep: aggregate and per-stream decode rate against concurrency, and the
  measured knee.
- cache: the warm test's TTFT saving over the cold one.
- turns: a multi-turn test's TTFT and prefix-cache hits turn by turn.
- prefix cache: what a load test's traffic claims of the server's prefix cache
  (random prompts: cold; a shared system prompt or turns: warm), checked
  against the server's hit counter.
"""

from __future__ import annotations

import statistics
from typing import Sequence

from pdx.domain.serving.metrics import concurrency_knee, percentile
from pdx.domain.serving.records import RequestRecord


def _arrivals(record: RequestRecord) -> list[tuple[int, int]]:
    """(arrival from the start of the load run, tokens) of every event."""
    return [(record.send_ns + t, n) for t, n in record.events]


def stall_stats(records: Sequence[RequestRecord]) -> dict | None:
    """How the steady streams fared while the intruder's prompt was prefilled."""
    intruder = next((r for r in records if r.role == "intruder" and r.first_ns is not None), None)
    steady = [r for r in records if r.role == "steady" and len(r.events) > 1]
    if intruder is None or not steady:
        return None
    start, end = intruder.send_ns, intruder.send_ns + intruder.first_ns
    before, during, worst = [], [], 0
    tokens_before = tokens_during = 0
    span_before = 0
    decoding = 0  # streams still decoding when the prompt went in (on a busy machine they can all have ended)
    for record in steady:
        events = _arrivals(record)
        first_seen = events[0][0]
        decoding += events[-1][0] > start
        for (t0, _), (t1, n) in zip(events, events[1:]):
            gap = t1 - t0
            if t1 <= start:
                before.append(gap)
            elif t0 < end:  # the gap overlaps the prefill
                during.append(gap)
                worst = max(worst, gap)
            if start < t1 <= end:
                tokens_during += n
        tokens_before += sum(n for t, n in events[1:] if t <= start)
        span_before += max((t for t, _ in events if t <= start), default=first_seen) - first_seen
    window = end - start
    rate_before = tokens_before * 1e9 / span_before if span_before else None
    rate_during = tokens_during * 1e9 / window / len(steady) if window else None
    return {
        "streams": len(steady),
        "streams_decoding_at_inject": decoding,
        "inject_prompt": intruder.n_prompt,
        "inject_ttft_ms": intruder.first_ns / 1e6,
        "itl_before_median_ms": statistics.median(before) / 1e6 if before else None,
        "itl_during_max_ms": worst / 1e6 if during else None,
        "itl_during_p99_ms": percentile(sorted(during), 99) / 1e6 if during else None,
        "itl_all_p99_ms": percentile(sorted(before + during), 99) / 1e6 if before or during else None,
        "stream_rate_before": rate_before,
        "stream_rate_during": rate_during,
        "rate_drop": 1 - rate_during / rate_before if rate_before and rate_during is not None else None,
    }


def sweep_points(tests: Sequence[dict]) -> list[dict]:
    """One point per closed-loop load test of a run: concurrency, aggregate and per-stream rates."""
    points = []
    for test in tests:
        spec, stats = test.get("spec") or {}, test.get("stats") or {}
        if spec.get("scenario") == "load" and spec.get("concurrency") and stats.get("completed"):
            points.append({"concurrency": spec["concurrency"], "output_throughput": stats["output_throughput"],
                           "per_stream_decode_rate": stats["per_stream_decode_rate"], "test": test["name"]})
    return sorted(points, key=lambda p: p["concurrency"])


def sweep_summary(tests: Sequence[dict]) -> dict | None:
    points = sweep_points(tests)
    if len(points) < 2:
        return None
    knee = concurrency_knee([(p["concurrency"], p["output_throughput"]) for p in points])
    return {"points": points, "measured_knee": knee}


def cache_summary(tests: Sequence[dict]) -> dict | None:
    """The warm test's TTFT against the cold one's, and the prefix-cache counters of each."""
    by_scenario = {(t.get("spec") or {}).get("scenario"): t for t in tests if t.get("stats")}
    cold, warm = by_scenario.get("cache-cold"), by_scenario.get("cache-warm")
    if not cold or not warm:
        return None
    cold_ttft, warm_ttft = cold["stats"]["ttft_ms"].get("median"), warm["stats"]["ttft_ms"].get("median")
    return {
        "cold_ttft_median_ms": cold_ttft,
        "warm_ttft_median_ms": warm_ttft,
        "ttft_saving": 1 - warm_ttft / cold_ttft if cold_ttft and warm_ttft is not None else None,
        "cold_prefix_hits": ((cold.get("engine") or {}).get("server") or {}).get("prefix_cache_hits"),
        "warm_prefix_hits": ((warm.get("engine") or {}).get("server") or {}).get("prefix_cache_hits"),
    }


def turn_stats(records: Sequence[RequestRecord]) -> list[dict] | None:
    """Per turn of a multi-turn test (roles ``turnN``): requests, prompt length, TTFT median and the
    prompt tokens the server took from its prefix cache (where its usage says)."""
    turns: dict[int, list[RequestRecord]] = {}
    for record in records:
        if record.role.startswith("turn") and record.role[4:].isdigit() and record.ok:
            turns.setdefault(int(record.role[4:]), []).append(record)
    if len(turns) < 2:
        return None
    out = []
    for turn in sorted(turns):
        group = turns[turn]
        cached = [r.cached_tokens for r in group if r.cached_tokens is not None]
        out.append({"turn": turn, "requests": len(group),
                    "prompt_mean": statistics.fmean(r.n_prompt for r in group),
                    "ttft_median_ms": statistics.median(r.first_ns for r in group) / 1e6,
                    "cached_tokens_mean": statistics.fmean(cached) if cached else None})
    return out


def cache_claim(spec: dict, server: dict | None, requests: int) -> dict | None:
    """A load test's claim on the prefix cache and whether the server's hit counter (over the test, its
    warm-up included) bears it out: cold traffic may hit a token a request by chance (a random first
    token the slot held), no more; warm traffic must hit. None where the server counts no hits."""
    hits = (server or {}).get("prefix_cache_hits")
    if hits is None or spec.get("scenario") != "load" or spec.get("trace"):
        return None
    if spec.get("system_prompt") or (spec.get("turns") or 1) > 1:
        return {"claim": "warm", "hits": hits, "holds": hits > 0}
    return {"claim": "cold", "hits": hits, "holds": hits <= requests}


# One client process times honestly while it has CPU to spare and runs its schedule on time: past
# these it is the client, not the server, that is measured (tests/benchmarks/client_capacity.py).
CLIENT_CORES_LIMIT = 0.9  # of its one core (the loop is one thread)
CLIENT_LATE_LIMIT_MS = 1.0  # its timers (scheduled sends), p99


def client_stats(samples: Sequence[dict]) -> dict | None:
    """What the client processes of a serving test did: how many, the busiest one's CPU and lateness, whether
    any was past its limit, their clocks' agreement and any that died; None for runs without the record."""
    found = []
    for sample in samples:
        engine = sample.get("engine") or {}
        found += engine.get("clients") or ([dict(engine["client"], shard=None, pool="local")] if engine.get("client")
                                           else [])
    if not found:
        return None
    cores = [c["cores"] for c in found if c.get("cores") is not None]
    late = [c["late_p99_ms"] for c in found if c.get("late_p99_ms") is not None]
    busiest, latest = max(cores, default=None), max(late, default=None)
    uncertain = [c["offset_uncertainty_ns"] for c in found if c.get("offset_uncertainty_ns") is not None]
    return {"processes": len({(c.get("shard"), c.get("pid")) for c in found}) if found[0].get("shard") is not None
            else 1,
            "pool": found[0].get("pool", "local"), "hosts": len({c.get("host") for c in found if c.get("host")}) or 1,
            "cores_max": busiest, "late_p99_ms_max": latest,
            "at_limit": (busiest is not None and busiest >= CLIENT_CORES_LIMIT)
            or (latest is not None and latest > CLIENT_LATE_LIMIT_MS),
            "clock_uncertainty_ms": max(uncertain) / 1e6 if uncertain else None,
            "died": [c["shard"] for c in found if c.get("died")]}
