"""Serving figures from request records, with vLLM's definitions."""

import numpy as np
import pytest

from pdx.contract.errors import PdxError, WorkloadError
from pdx.domain.serving.analysis import stall_stats
from pdx.domain.serving.metrics import (concurrency_knee, distribution, meets_slo, parse_percentiles, parse_slo,
                                        serving_stats)
from pdx.domain.serving.records import RequestRecord
from pdx.domain.serving.spec import ServeSpec
from pdx.domain.serving.workloads import stored_workload
from pdx.domain.workload import Workload

MS = 1_000_000


def record(idx, first_ms, gaps_ms, send_ms=0, role="load", status="ok"):
    events, t = [], first_ms * MS
    for gap in [0, *gaps_ms]:
        t += gap * MS
        events.append((t, 1))
    return RequestRecord(idx=idx, n_prompt=16, max_tokens=len(events), role=role, send_ns=send_ms * MS,
                         first_ns=first_ms * MS, end_ns=events[-1][0] + MS, events=events, status=status)


def test_distribution_matches_numpy():
    values = np.random.default_rng(0).gamma(2.0, 3.0, 101) * MS
    out = distribution(values, (50, 90, 99, 99.9))
    ms = values / MS
    assert out["mean"] == pytest.approx(ms.mean()) and out["std"] == pytest.approx(ms.std())
    for p in (50, 90, 99, 99.9):
        assert out[f"p{p:g}"] == pytest.approx(np.percentile(ms, p))
    assert out["median"] == pytest.approx(np.median(ms)) and distribution([]) == {"n": 0}


def test_serving_stats_define_tpot_itl_and_throughput_like_vllm():
    records = [record(0, 100, [10, 20, 30]), record(1, 200, [10, 10, 10], send_ms=50),
               record(2, 50, [5], status="error")]
    stats = serving_stats(records, makespan_ns=2_000 * MS, slo={"ttft": 150, "tpot": 25})
    assert (stats["completed"], stats["failed"], stats["output_tokens"]) == (2, 1, 8)
    assert stats["ttft_ms"]["mean"] == pytest.approx(150)
    # TPOT = (E2EL - TTFT) / (n - 1): (61 + 1) / 3 and (30 + 1) / 3 ms.
    assert stats["tpot_ms"]["mean"] == pytest.approx(((60 + 1) / 3 + (30 + 1) / 3) / 2)
    assert sorted([stats["itl_ms"]["min"], stats["itl_ms"]["max"]]) == [10, 30] and stats["itl_ms"]["n"] == 6
    assert stats["request_throughput"] == pytest.approx(1.0) and stats["output_throughput"] == pytest.approx(4.0)
    assert stats["good_requests"] == 1 and stats["goodput"] == pytest.approx(0.5)
    assert not meets_slo(records[2], {})  # a failed request is never good


def test_slo_and_percentile_parsing():
    assert parse_slo("ttft=500ms, tpot=50ms,e2el=2s,itl=300us") == {"ttft": 500, "tpot": 50, "e2el": 2000, "itl": 0.3}
    assert parse_slo(None) == {}
    for bad in ("ttft", "ttfx=5ms", "ttft=fast"):
        with pytest.raises(PdxError, match="--slo"):
            parse_slo(bad)
    assert parse_percentiles("50,99.9") == (50, 99.9)
    with pytest.raises(PdxError, match="--percentiles"):
        parse_percentiles("0,50")


def test_concurrency_knee():
    linear_then_flat = [(1, 10.0), (4, 39.0), (16, 60.0)]
    assert concurrency_knee(linear_then_flat) == 4
    assert concurrency_knee([(1, 10.0), (4, 40.0), (16, 150.0)]) is None


def test_stall_stats_find_the_victims_gap():
    steady = [record(i, 10, [10] * 5 + [200] + [10] * 5, role="steady") for i in range(2)]
    # The intruder arrives after the steady streams' 5th token and gets its first token 200 ms later.
    intruder = record(2, 195, [10], send_ms=62, role="intruder")
    stats = stall_stats(steady + [intruder])
    assert stats["streams"] == 2 and stats["inject_ttft_ms"] == pytest.approx(195)
    assert stats["itl_during_max_ms"] == pytest.approx(200) and stats["itl_before_median_ms"] == pytest.approx(10)
    assert stats["stream_rate_before"] == pytest.approx(100) and stats["rate_drop"] > 0.5
    assert stats["streams_decoding_at_inject"] == 2
    # Sent after every stream had ended (a client held up on a busy machine): nothing measured, and said.
    late = stall_stats(steady + [record(2, 195, [10], send_ms=5000, role="intruder")])
    assert late["streams_decoding_at_inject"] == 0 and late["itl_during_max_ms"] is None


def test_serve_specs_name_validate_and_round_trip():
    spec = ServeSpec("load", 128, 32, concurrency=4, n_requests=16, slo={"ttft": 500.0})
    assert spec.name == "c4:p128+g32:n16" and spec.batch == 4 and spec.expected_tokens() is None
    open_spec = ServeSpec("load", 64, 8, rate=float("inf"), burstiness=0.5, duration_s=10, max_concurrency=8)
    assert open_spec.name == "rinf:p64+g8:10s:burst0.5:max8"
    assert ServeSpec("stall", 16, 64, concurrency=4, inject=1024).name == "stall:c4:p16+g64:inject1024"
    workload = Workload((spec, open_spec), repetitions=1, warmup=0)
    again = stored_workload(workload.to_dict())
    with pytest.raises(WorkloadError, match="serving scenario"):
        Workload.from_dict(workload.to_dict())  # pdx.domain.workload alone reads pp/tg tests
    assert again.tests == workload.tests and again.tests[0].slo == {"ttft": 500.0}
    for bad in (dict(scenario="load", n_prompt=8, n_gen=8, n_requests=4),
                dict(scenario="stall", n_prompt=8, n_gen=8, concurrency=2),
                dict(scenario="stall", n_prompt=8, n_gen=8, inject=64),  # no streams: its plan had no length
                dict(scenario="cache-warm", n_prompt=8, n_gen=1, prefix=8, n_requests=2),
                dict(scenario="nope", n_prompt=8, n_gen=8)):
        with pytest.raises(WorkloadError):
            ServeSpec(**bad)


def test_a_load_tests_prefix_cache_claim_is_checked_against_the_servers_hits():
    from pdx.domain.serving.analysis import cache_claim

    cold = {"scenario": "load", "turns": 1, "system_prompt": 0}
    assert cache_claim(cold, {"prefix_cache_hits": 3}, 4) == {"claim": "cold", "hits": 3, "holds": True}  # chance
    assert not cache_claim(cold, {"prefix_cache_hits": 256}, 4)["holds"]  # seen before
    assert cache_claim(cold | {"turns": 3}, {"prefix_cache_hits": 0}, 6)["holds"] is False
    assert cache_claim(cold | {"system_prompt": 64}, {"prefix_cache_hits": 128}, 6)["claim"] == "warm"
    assert cache_claim(cold, {}, 4) is None and cache_claim(cold | {"scenario": "stall"}, {"prefix_cache_hits": 9},
                                                            4) is None
