"""Honest timing under load: scheduled vs sent times, per-token ITL from merged chunks,
no catch-up bursts, and the over-saturation stop (unit level and through the CLI against
the local test server, whose own concurrency is unlimited: the client's cap is the queue)."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from pdx.serving.metrics import meets_slo, serving_stats
from pdx.serving.records import RequestRecord
from pdx.serving.saturation import MIN_POINTS, slope, verdict

from conftest import run_pdx

MS = 1_000_000


def test_scheduled_time_adds_the_wait_for_a_slot():
    late = RequestRecord(0, 8, 3, send_ns=300 * MS, scheduled_ns=100 * MS, first_ns=50 * MS, end_ns=90 * MS,
                         events=[(50 * MS, 1), (70 * MS, 1), (90 * MS, 1)])
    assert (late.dispatch_ns, late.ttft_sched_ns, late.e2el_sched_ns) == (200 * MS, 250 * MS, 290 * MS)
    closed = RequestRecord(1, 8, 3, send_ns=300 * MS, first_ns=50 * MS, end_ns=90 * MS)
    assert (closed.dispatch_ns, closed.ttft_sched_ns) == (0, 50 * MS)
    # Goodput judges the latency the user saw: from the schedule.
    assert meets_slo(late, {"ttft": 100}) is False and meets_slo(closed, {"ttft": 100}) is True
    stats = serving_stats([late], 400 * MS)
    assert stats["ttft_ms"]["median"] == 50 and stats["ttft_sched_ms"]["median"] == 250
    assert stats["e2el_sched_ms"]["median"] == 290 and stats["dispatch_ms"]["median"] == 200
    assert "ttft_sched_ms" not in serving_stats([closed], 400 * MS)  # closed loop: no schedule to count from


def test_itl_is_per_token_when_chunks_carry_several():
    merged = RequestRecord(0, 8, 5, first_ns=10 * MS, end_ns=50 * MS,
                           events=[(10 * MS, 1), (30 * MS, 2), (50 * MS, 2)])
    single = RequestRecord(1, 8, 5, first_ns=10 * MS, end_ns=50 * MS,
                           events=[(10 * MS, 1), (20 * MS, 1), (30 * MS, 1), (40 * MS, 1), (50 * MS, 1)])
    assert merged.itl_ns == single.itl_ns == [10 * MS] * 4
    assert merged.chunk_gaps_ns == [20 * MS, 20 * MS]  # vllm bench serve's per-chunk ITL
    assert merged.tpot_ns == single.tpot_ns == 10 * MS
    assert serving_stats([merged], 60 * MS)["chunks_per_token"] == pytest.approx(3 / 5)
    assert serving_stats([single], 60 * MS)["chunks_per_token"] == 1


@given(st.lists(st.tuples(st.integers(1, 10**9), st.integers(1, 8)), min_size=1, max_size=40))
def test_per_token_gaps_add_up_to_the_decode_time(steps):
    t, events = 0, []
    for gap, n in steps:
        t += gap
        events.append((t, n))
    record = RequestRecord(0, 1, 1, first_ns=events[0][0], end_ns=t, events=events)
    gaps = record.itl_ns
    assert len(gaps) == record.n_gen - events[0][1]
    assert sum(gaps) == pytest.approx(record.decode_ns or 0, rel=1e-9)


def test_slope_of_a_line_and_of_noise():
    assert slope([(x, 2 * x + 1) for x in range(10)])[0] == pytest.approx(2)
    assert slope([(x, 5.0) for x in range(10)]) == (0.0, 0.0)
    assert slope([(0, 1.0), (1, 2.0)]) == (0.0, 0.0)


def test_saturation_verdict_needs_queue_and_ttft_rising():
    window = 2.0
    times = [i * 0.1 for i in range(40)]
    falling_behind = [(t, 10 * i, 4 * i) for i, t in enumerate(times)]  # 100/s due, 40/s ended
    keeping_up = [(t, 10 * i, 10 * i - 3) for i, t in enumerate(times)]
    rising_ttft = [(t, 50 + 400 * t) for t in times]
    flat_ttft = [(t, 50.0) for t in times]
    found = verdict(falling_behind, rising_ttft, times[-1], window)
    assert found and found["at_s"] == pytest.approx(3.9)
    assert found["due_in_window"] in (190, 200) and found["ended_in_window"] == found["due_in_window"] * 4 // 10
    assert found["queue_growth"] == found["due_in_window"] - found["ended_in_window"]
    assert verdict(falling_behind, flat_ttft, times[-1], window) is None
    assert verdict(keeping_up, rising_ttft, times[-1], window) is None
    assert verdict(falling_behind, rising_ttft, window / 2, window) is None  # not a window old yet
    assert verdict(falling_behind, rising_ttft, times[-1], 0) is None  # off


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 3)), min_size=MIN_POINTS, max_size=60),
       st.lists(st.floats(0, 1e4, allow_nan=False), min_size=MIN_POINTS, max_size=60))
def test_a_server_that_ends_what_comes_due_is_never_saturated(steps, ttft_values):
    """Whatever the latencies, a run whose ended count keeps within a few of its due count never stops."""
    counts, due = [], 0
    for i, (arrivals, lag) in enumerate(steps):
        due += arrivals
        counts.append((i * 0.1, due, max(0, due - lag)))
    ttft = [(i * 0.1 * len(steps) / len(ttft_values), v) for i, v in enumerate(ttft_values)]
    now = counts[-1][0]
    assert verdict(counts, ttft, now, now or 1.0) is None


def _serve(fake_server, registry_url, *args):
    result = run_pdx("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-o", "model_name=fake",
                     "--registry", registry_url, "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]


def test_a_capped_open_loop_queues_and_the_scheduled_ttft_says_so(fake_server, registry_url):
    """Issue 17's acceptance: --max-concurrency 2 at a rate far above what two slots take."""
    run = _serve(fake_server, registry_url, "--request-rate", "200", "--max-concurrency", "2", "-p", "8", "-n", "6",
                 "--num-requests", "16", "--saturation-window", "0")
    (test,) = run["tests"]
    records = sorted(test["requests"], key=lambda r: r["idx"])
    assert all(r["status"] == "ok" and r["scheduled_ns"] is not None for r in records)
    assert all(r["send_ns"] >= r["scheduled_ns"] for r in records)
    # No burst to catch up: two sends are never closer than their scheduled gap.
    for a, b in zip(records, records[1:]):
        assert b["send_ns"] - a["send_ns"] >= b["scheduled_ns"] - a["scheduled_ns"] - 1000
    # The queue builds: the wait for a slot grows, and the scheduled-time TTFT holds it, the sent-time one not.
    waits = [r["send_ns"] - r["scheduled_ns"] for r in records]
    assert waits[-1] > max(waits[:2])
    stats = test["stats"]
    assert stats["ttft_sched_ms"]["max"] == pytest.approx(max(
        (r["first_ns"] + w) / MS for r, w in zip(records, waits)))
    assert stats["ttft_sched_ms"]["median"] > stats["ttft_ms"]["median"]
    assert stats["dispatch_ms"]["n"] == 16 and stats["chunks_per_token"] == 1
    shown = run_pdx("show", run["id"], "--registry", registry_url).stdout
    assert "sched TTFT p99" in shown and "from the schedule, TTFT p50" in shown and "dispatch delay" in shown


def test_catch_up_lets_the_late_requests_go_together(fake_server, registry_url):
    run = _serve(fake_server, registry_url, "--request-rate", "200", "--max-concurrency", "2", "-p", "8", "-n", "6",
                 "--num-requests", "8", "--catch-up", "--saturation-window", "0")
    (test,) = run["tests"]
    assert test["spec"]["catch_up"] is True and len(test["requests"]) == 8


def test_an_over_saturated_open_loop_stops_early_and_says_so(fake_server, registry_url):
    run = _serve(fake_server, registry_url, "--request-rate", "100", "--max-concurrency", "2", "-p", "8", "-n", "4",
                 "--duration", "30", "--saturation-window", "1")
    (test,) = run["tests"]
    saturation = test["stats"]["saturation"]
    assert saturation["queue_growth"] > 0 and saturation["ttft_slope_ms_per_s"] > 0
    assert saturation["window_s"] == 1 and saturation["unsent_due"] > 0
    assert test["samples"][0]["engine"]["saturation"]["at_s"] == saturation["at_s"]
    # It stopped sending: far fewer requests than 30 s at 100/s.
    assert len(test["requests"]) < 1000 and test["status"] == "ok"
    assert "over-saturated" in run_pdx("show", run["id"], "--registry", registry_url).stdout


def test_a_server_that_keeps_up_is_not_stopped(fake_server, registry_url):
    run = _serve(fake_server, registry_url, "--request-rate", "10", "-p", "8", "-n", "4", "--duration", "2.5",
                 "--saturation-window", "1")
    (test,) = run["tests"]
    assert "saturation" not in test["stats"] and test["stats"]["completed"] == len(test["requests"])
