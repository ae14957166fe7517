"""Honest timing under load: scheduled vs sent times, per-token ITL from merged chunks,
no catch-up bursts, and the over-saturation stop (unit level and through the CLI against
the local test server, whose own concurrency is unlimited: the client's cap is the queue)."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from pdx.domain.serving.metrics import meets_slo, serving_stats
from pdx.domain.serving.records import RequestRecord
from pdx.domain.serving.saturation import MIN_POINTS, slope, verdict

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
    # No burst to catch up: a request the cap held (all but the first two) is never sent sooner after
    # the one before than its scheduled gap.
    for a, b in zip(records[1:], records[2:]):
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


# Capacity search: the bracketing on a known threshold, then end to end on a server that queues.

from pdx.contract.errors import PdxError  # noqa: E402
from pdx.domain.serving.capacity import (SIDES, Search, SloWatch, bracket, certain_over, judge,  # noqa: E402
                                  parse_capacity_slo)


@settings(max_examples=300)
@given(st.floats(0.05, 500), st.floats(0.05, 500), st.floats(0.05, 1.0))
def test_the_search_brackets_a_threshold_to_its_precision(threshold, start, precision):
    search = Search(lambda x: x <= threshold, start, precision, max_points=40)
    lo, hi = search.run()
    assert lo is not None and hi is not None and lo <= threshold < hi
    assert hi / lo - 1 <= precision
    assert [x for x, _ in search.tried].count(lo) >= 2 and [x for x, _ in search.tried].count(hi) >= 2


@given(st.integers(1, 300), st.integers(1, 300))
def test_the_concurrency_search_ends_on_neighbours(threshold, start):
    lo, hi = Search(lambda c: c <= threshold, start, precision=0.001, integer=True, max_points=40).run()
    assert (lo, hi) == (threshold, threshold + 1)


def test_a_repeat_that_disagrees_widens_the_bracket():
    seen: dict = {}

    def flaky(x):  # 8 holds the first time only
        seen[x] = seen.get(x, 0) + 1
        return x < 8 or (x == 8 and seen[x] == 1)

    search = Search(flaky, 1, precision=0.01, integer=True, max_points=20)
    assert search.run() == (7, 8)
    assert bracket([(4, True), (8, True), (8, False), (16, False)]) == (4, 8)
    assert bracket([(4, True), (8, True)]) == (8, None) and bracket([(4, False)]) == (None, 4)
    assert Search(lambda x: False, 1, integer=True).run() == (None, 1)


def test_capacity_slo_and_what_broke():
    assert parse_capacity_slo("ttft=2s,itl=200ms") == ({"ttft": 2000, "itl": 200}, 90)
    assert parse_capacity_slo("ttft=500ms, p=99") == ({"ttft": 500}, 99)
    for bad in (None, "p=99", "ttft=1s,p=0", "ttft=1s,p=x"):
        with pytest.raises(PdxError, match="SLO|--slo"):
            parse_capacity_slo(bad)
    stats = {"failed": 0, "ttft_sched_ms": {"p90": 900.0}, "ttft_ms": {"p90": 100.0}, "itl_ms": {"p90": 400.0}}
    verdict = judge(stats, {"ttft": 1000, "itl": 100}, 90, saturated=False)
    assert verdict == {"held": False, "values": {"ttft": 900.0, "itl": 400.0}, "broke": ["itl"]}
    assert judge(stats, {"ttft": 800}, 90, False)["broke"] == ["ttft"]  # judged from the schedule
    assert judge(dict(stats, failed=2), {"ttft": 1000}, 90, True)["broke"] == ["errors", "saturation"]
    assert judge(stats, {"ttft": 1000}, 90, False)["held"] is True


@pytest.fixture(scope="module")
def queueing_server():
    """The local test server serving two streams at a time: past ~2 / service time per second it queues."""
    import subprocess
    import sys

    from conftest import FAKE_SERVER

    proc = subprocess.Popen([sys.executable, str(FAKE_SERVER), "--ttft", "0.05", "--itl", "0.01", "--slots", "2"],
                            stdout=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{int(proc.stdout.readline().split()[1])}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("axis", [(), ("-c", "1")], ids=["rate", "concurrency"])
def test_capacity_search_end_to_end(queueing_server, registry_url, axis):
    run = _serve(queueing_server, registry_url, "--scenario", "capacity", "--slo", "ttft=300ms,itl=100ms,p=90",
                 "-p", "8", "-n", "4", "--num-requests", "10", "--precision", "0.5", "--saturation-window", "2", *axis)
    (test,) = run["tests"]
    found = test["stats"]["capacity"]
    assert found["axis"] == ("concurrency" if axis else "rate") and found["percentile"] == 90
    assert found["slo"] == {"ttft": 300, "itl": 100}
    points = found["points"]
    roles = {r["role"] for r in test["requests"]}
    assert roles == {p["role"] for p in points}
    # Every point sends its 10 requests, unless it broke for certain first (and then says so).
    assert all(p["requests"] == 10 if not p["gave_up"] else (not p["held"] and p["gave_up"]["metric"] in p["broke"])
               for p in points)
    lo, hi = found["bracket"]
    for point in points:  # the verdict agrees with the figures stored beside it
        over = [m for m, v in point["values"].items() if v is None or v > found["slo"][m]]
        assert point["held"] == (not point["broke"]) and set(over) <= set(point["broke"])
    if found["found"]:
        assert lo < hi and lo <= found["capacity"] <= hi and found["side"] == SIDES[found["broke_first"]]
        assert [p["x"] for p in points].count(hi) >= 2  # the boundary measured again
        assert found["broke_first"] in next(p for p in points if p["x"] == hi and not p["held"])["broke"]
    shown = run_pdx("show", run["id"], "--registry", registry_url).stdout
    assert "capacity" in shown and ("broke first" in shown or "not bracketed" in shown)


@settings(max_examples=300)
@given(st.integers(1, 400), st.floats(1, 100), st.data())
def test_a_point_given_up_could_not_have_held(planned, p, data):
    """However the requests not yet ended turn out, ``certain_over`` values over the limit put the
    percentile (as serving_stats computes it) over the limit; with one fewer, the lower of the two
    ranks it reads can be a value under the limit, so the point could still hold."""
    import math

    from pdx.domain.serving.metrics import percentile

    need = certain_over(planned, p)
    assert 1 <= need <= planned
    rest = data.draw(st.lists(st.floats(0, 2.0), min_size=planned - need, max_size=planned - need))
    assert percentile(sorted([5.0] * need + rest), p) > 2.0
    fewer = sorted([5.0] * (need - 1) + [0.0] * (planned - need + 1))
    assert fewer[math.floor((planned - 1) * p / 100)] == 0.0


def test_the_slo_watch_counts_per_request_targets_and_errors():
    from pdx.domain.serving.records import RequestRecord

    def ended(ttft_ms, ok=True, scheduled_late_ms=0):
        record = RequestRecord(idx=0, n_prompt=8, max_tokens=4, send_ns=int(scheduled_late_ms * 1e6),
                               scheduled_ns=0, first_ns=int(ttft_ms * 1e6), end_ns=int(ttft_ms * 1e6) + 30_000_000,
                               events=[(int(ttft_ms * 1e6) + i * 10_000_000, 1) for i in range(4)])
        if not ok:
            record.fail("boom")
        return record

    watch = SloWatch({"ttft": 300, "itl": 100}, 90, planned=10)  # p90 of 10: 2 over settle it
    assert watch.observe(ended(100)) is None and watch.observe(ended(250, scheduled_late_ms=100)) is None
    assert watch.over == {"ttft": 1}  # 250 ms from its send, 350 from its schedule: over
    verdict = watch.observe(ended(400))
    assert verdict["metric"] == "ttft" and verdict["over"] == 2 and verdict["of_planned"] == 10
    assert SloWatch({"ttft": 300}, 90, 10).observe(ended(1, ok=False))["metric"] == "errors"
    assert judge({"failed": 0, "ttft_ms": {"p90": 100.0}}, {"ttft": 300}, 90, False, verdict)["broke"] == ["ttft"]


def test_a_spent_budget_reports_the_bracket_as_it_stands():
    import time

    def slow(x):
        time.sleep(0.05)
        return x <= 3

    search = Search(slow, 1, precision=0.01, integer=True, max_points=40, budget_s=0.01)
    assert search.run() == (1, None) and search.out_of_time and len(search.tried) == 1
