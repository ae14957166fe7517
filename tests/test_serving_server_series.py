"""The server's own time series during a serving test (pdx.domain.serving.server_series): read from a real
llama-server started by pdx with --metrics, stored on the load run's clock, summarised in `pdx show`
and drawn under the timeline on the run page."""

import json

import pytest

from pdx.reports.charts.runcharts import run_charts
from pdx.domain.serving.server_series import series_summary
from pdx.domain.synth import get_shape, write_gguf

from conftest import run_pdx


def test_a_summary_takes_peaks_of_levels_and_increases_of_counters():
    a = {"t_ns": [-9, -5, 100, 200], "every_ms": 250, "failed": 1,
         "metrics": {"running": [9, 0, 2, 1], "waiting": [9, 0, 3, None], "prefix_cache_hits": [0, 10, 10, 30],
                     "prefix_cache_queries": [0, 10, 40, 90]}}
    b = {"t_ns": [0, 100], "every_ms": 500, "metrics": {"running": [4, 0], "prefix_cache_hits": [30, 40],
                                                          "prefix_cache_queries": [90, 100]}}
    found = series_summary([a, b])
    # a's first reading (before its load run's start) is the start; b's is at it
    assert found["points"] == 5 and found["samples"] == 2 and found["every_ms"] == 500 and found["failed"] == 1
    assert found["peak_running"] == 4 and found["peak_waiting"] == 3 and "peak_kv_cache_usage" not in found
    assert found["prefix_cache_hits"] == 30 and found["prefix_cache_queries"] == 90
    assert found["prefix_cache_hit_rate"] == pytest.approx(30 / 90)


def test_a_long_series_stays_bounded_and_says_its_spacing():
    from pdx.domain.serving.server_series import SeriesRecorder

    recorder = SeriesRecorder("http://127.0.0.1:9", {}, {"running": ("x",)}, 10, max_points=8)
    t = 0
    for _ in range(40):  # as the thread reads: every every_ms, which doubles as readings are dropped
        recorder.keep(t, {"running": 1.0})
        t += int(recorder.every_ms * 1e6)
    assert len(recorder.readings) <= 8 and recorder.every_ms > 10
    stamps = [t for t, _ in recorder.readings]
    assert stamps[0] == 0 and {b - a for a, b in zip(stamps, stamps[1:])} == {int(recorder.every_ms * 1e6)}


def test_a_server_without_metrics_gives_no_series():
    from pdx.domain.serving.server_series import SeriesRecorder

    recorder = SeriesRecorder("http://127.0.0.1:9", {}, {"running": ("x",)}, 10).start()
    assert recorder.stop(None) is None and recorder.failed >= 1


@pytest.mark.llamacpp
def test_serve_bench_on_llama_server_stores_its_series_on_the_runs_clock(registry_url, tmp_path):
    model = str(write_gguf(get_shape("tiny"), "f16", tmp_path / "tiny-f16.gguf"))
    result = run_pdx("serve-bench", "--backend", "llamacpp-server", "-m", model, "--registry", registry_url, "--json",
                     "--server-args", "-c 2048 -np 2", "--concurrency", "2", "-p", "32", "-n", "64",
                     "--num-requests", "4", "-o", "series_interval_ms=20")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    (test,) = run["tests"]
    assert test["status"] == "ok", test["error"]
    (sample,) = test["samples"]
    series = sample["engine"]["server_series"]
    assert series["interval_ms"] == 20 and len(series["t_ns"]) >= 3
    assert set(series["metrics"]) >= {"running", "waiting", "generation_tokens", "decode_calls"}
    assert all(len(v) == len(series["t_ns"]) for v in series["metrics"].values())
    # on the requests' clock: readings before the first send and after the last token
    sends = [r["send_ns"] for r in test["requests"]]
    ends = [r["send_ns"] + r["end_ns"] for r in test["requests"]]
    assert series["t_ns"][0] <= min(sends) and series["t_ns"][-1] >= max(ends)
    summary = test["stats"]["server_series"]
    assert summary["peak_running"] >= 1, json.dumps(series)
    # the server's own count of generated tokens over the load run: every request pdx timed, and at most the
    # warm-up request's 64 (the last reading before the start can come before the warm-up's last tokens)
    timed = sum(r["n_gen"] for r in test["requests"])
    assert timed <= summary["generation_tokens"] <= timed + 64
    shown = run_pdx("show", run["id"], "--registry", registry_url).stdout
    assert "the server's /metrics" in shown and "peak running" in " ".join(shown.split())
    charts = [c.name for c in run_charts(run)]
    assert charts.index("server-series") == charts.index("requests-timeline") + 1
