"""Serving charts from stored records: the requests timeline and the capacity curve, in a report."""

from pdx.reports.charts import serving as serving_charts
from pdx.reports.report.single_file import render_report

from test_report_figures import run_dict

MS = 1_000_000


def _capacity_test():
    points = [{"x": x, "role": f"point{i}", "held": held, "broke": [] if held else ["ttft"],
               "values": {"ttft": ttft, "itl": 20.0}, "origin_offset_ns": i * 1000 * MS}
              for i, (x, held, ttft) in enumerate([(1.0, True, 100.0), (2.0, True, 300.0), (4.0, False, 900.0),
                                                   (2.0, True, 320.0), (4.0, False, 950.0)])]
    found = {"axis": "rate", "slo": {"ttft": 500.0, "itl": 50.0}, "percentile": 90, "capacity": 2.83,
             "bracket": [2.0, 4.0], "found": True, "broke_first": "ttft", "side": "prefill", "points": points}
    requests = [{"role": f"point{i}", "status": "ok", "send_ns": k * 100 * MS, "scheduled_ns": k * 90 * MS,
                 "first_ns": 50 * MS, "events": [[50 * MS, 1], [70 * MS, 2]]} for i in range(5) for k in range(3)]
    return {"name": "capacity:r:p8+g4:auto:ttft500+itl50@p90", "kind": "serve", "n_prompt": 8, "n_gen": 4,
            "depth": 0, "batch": 1, "status": "ok", "error": None, "engine": {}, "stats": {"capacity": found},
            "requests": requests, "samples": []}


def test_capacity_points_carry_every_measurement_and_the_slo():
    points, marks = serving_charts.capacity_points([run_dict([_capacity_test()])], lambda r: "cpu")
    assert len(points) == 10 and {m["metric"] for m in marks} == {"TTFT p90 (ms)", "ITL p90 (ms)"}
    assert [p["held"] for p in points if p["metric"] == "TTFT p90 (ms)"].count("breaks") == 2
    assert {m["slo"] for m in marks} == {500.0, 50.0} and all(m["capacity"] == 2.83 for m in marks)


def test_timeline_puts_each_point_after_the_one_before():
    bars, left_out = serving_charts.timeline_points([run_dict([_capacity_test()])], lambda r: "cpu")
    assert left_out == 0
    waits = [b for b in bars if b["phase"] == "wait"]
    assert len(waits) == 5 * 2  # the first request of each point went on time
    starts = [b["start_s"] for b in bars if b["phase"] == "prefill"]
    assert starts == sorted(starts) and max(starts) >= 4.0  # point 4 starts 4 s after point 0
    for b in bars:
        assert b["end_s"] > b["start_s"]


def test_the_report_shows_both_charts():
    html = render_report([run_dict([_capacity_test()])])
    assert "Capacity under the SLO" in html and "Requests over time" in html
