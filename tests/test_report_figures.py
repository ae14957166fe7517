"""What the report pages compute: phase rows, ceilings as stored by pdx.domain.ceilings,
knees, chart data, and the charts' units. No engine, no browser."""

import copy

import pytest

from pdx.reports.charts import figures
from pdx.reports.charts import specs as charts
from pdx.reports.report.single_file import render_report
from pdx.reports.rows import DECODE, PREFILL, ceiling_of, run_rows

from runfactory import START


def _test(name, kind, n_prompt, n_gen, depth=0, batch=1, rate=100.0, ceilings=None, split=None):
    stats = {"rate": {"n": 3, "mean": rate, "stddev": 1.0, "median": rate, "min": rate - 1, "max": rate + 1,
                      "ci95": 2.5}, "per_sequence_rate": rate / batch}
    if split:
        stats["prompt_rate"] = {**stats["rate"], "mean": split[0]}
        stats["gen_rate"] = {**stats["rate"], "mean": split[1]}
    return {"name": name, "kind": kind, "n_prompt": n_prompt, "n_gen": n_gen, "depth": depth, "batch": batch,
            "status": "ok", "error": None, "engine": {}, "ceilings": ceilings, "stats": stats,
            "samples": [{"ns": int((n_prompt + n_gen) * batch * 1e9 / rate)}] * 3}


def one_phase(phase, ceiling, bound, measured):
    return {"version": 1, "source": "catalog", "phases": {phase: {"memory_bound": ceiling, "compute_bound": ceiling * 3,
                                                                  "ceiling": ceiling, "bound": bound}},
            "ceiling": ceiling, "bound": bound, "measured": measured, "fraction": measured / ceiling}


def run_dict(tests, run_id="a" * 32, threads=2, basis=None):
    return {"id": run_id, "status": "complete", "created_at": START.isoformat(), "finished_at": START.isoformat(),
            "backend": "llamacpp-python", "threads": threads, "tags": [], "options": {}, "command": "pdx bench",
            "error": None, "pdx_version": "0.1.0", "workload": {"repetitions": 3, "warmup": 1, "seed": 42},
            "engine": {"name": "llama.cpp", "version": "b1", "commit": "abc", "settings": {}, "details": {}},
            "model": {"name": "m", "sha256": "f" * 64, "architecture": "llama", "n_params": 10**9, "dtype": "F16",
                      "file_bytes": 2 * 10**9, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "head_dim": 32},
            "hardware": {"id": "h" * 16, "kind": "cpu", "name": "CPU", "cpu": {}, "gpus": []},
            "environment": {"platform": "Linux", "python": "3.11"}, "ceiling_basis": basis, "tests": tests}


PG_CEILINGS = {
    "version": 1, "ceiling": 50.0, "bound": "memory", "measured": 40.0, "fraction": 0.8,
    "phases": {"prefill": {"ceiling": 500.0, "bound": "compute", "memory_bound": 900.0, "compute_bound": 500.0,
                           "measured": 250.0, "fraction": 0.5},
               "decode": {"ceiling": 25.0, "bound": "memory", "memory_bound": 25.0, "compute_bound": 80.0,
                          "measured": 20.0, "fraction": 0.8}},
}
BASIS = {"version": 1, "bandwidth": 400e9, "flops": 27e12, "flops_dtype": "fp16", "source": "catalog",
         "label": "Apple M2 Max", "method": "vendor peak figures (catalog.json)", "ridge_point": 67.5,
         "knee_batch": 3.6, "chip": {"bandwidth_gbs": {"value": 400, "url": "https://www.apple.com/newsroom/x"},
                                     "tflops": {"fp16": {"value": 27, "url": "javascript:alert(1)"}}}}


def test_rows_split_pp_tg_tests_and_carry_their_ceilings():
    run = run_dict([_test("pp64", "pp", 64, 0, rate=300.0, ceilings=one_phase(PREFILL, 600.0, "compute", 300.0)),
                    _test("pp32+tg8", "pg", 32, 8, rate=40.0, ceilings=PG_CEILINGS, split=(250.0, 20.0))])
    rows = run_rows(run)
    assert [(r.test, r.phase, r.part) for r in rows] == [
        ("pp64", PREFILL, False), ("pp32+tg8", "prefill+decode", False),
        ("pp32+tg8", PREFILL, True), ("pp32+tg8", DECODE, True)]
    assert rows[0].ceiling.rate == 600.0 and rows[0].ceiling.bound == "compute" and rows[0].ceiling.fraction == 0.5
    assert rows[0].ceiling.memory_rate == 600.0 and rows[0].ceiling.compute_rate == 1800.0
    assert (rows[1].ceiling.rate, rows[1].ceiling.fraction) == (50.0, 0.8)
    assert (rows[3].ceiling.rate, rows[3].ceiling.bound, rows[3].ceiling.memory_rate) == (25.0, "memory", 25.0)
    assert ceiling_of({"kind": "tg", "ceilings": None}, DECODE) is None


def test_batch_knee_is_where_per_sequence_decode_stops_being_nearly_free():
    assert figures.batch_knee({1: 50.0, 2: 48.0, 4: 45.0, 8: 30.0, 16: 18.0}) == 4
    assert figures.batch_knee({1: 50.0, 2: 30.0}) == 1
    assert figures.batch_knee({2: 30.0, 4: 20.0}) is None  # no batch-1 reference
    run = run_dict([_test(f"tg16/b{b}", "tg", 0, 16, batch=b, rate=r)
                    for b, r in ((1, 50.0), (2, 98.0), (4, 180.0), (8, 240.0))], basis=BASIS)
    points, knees = figures.batch_points([run], lambda r: "cpu")
    assert [p["batch"] for p in points] == [1, 2, 4, 8] and points[2]["per_sequence"] == 45.0
    assert {k["kind"]: k["batch"] for k in knees} == {"measured knee": 4, "predicted knee": 4}


def test_every_axis_names_its_unit():
    bars = [{"label": "pp64", "series": "", "phase": PREFILL, "rate": 1.0, "lo": None, "hi": None, "ceiling": 2.0,
             "note": "50% of compute bound"}]
    spreads = [{"series": "s", "metric": m, "min": 1.0, "p25": 2.0, "p50": 3.0, "p75": 4.0, "p99": 5.0, "max": 6.0}
               for m in ("TTFT", "ITL")]
    specs = [charts.phase_bars(bars, "test"),
             charts.rate_vs_depth([{"series": "s", "phase": DECODE, "depth": d, "rate": 1.0} for d in (0, 64)]),
             charts.batch_sweep([{"series": "s", "batch": b, "aggregate": 2.0, "per_sequence": 1.0} for b in (1, 2)],
                                [{"series": "s", "batch": 2, "kind": "measured knee"}]),
             charts.change_bars([{"test": "tg16", "change": -0.2, "verdict": "worse"}]),
             charts.latency_distributions(spreads)]

    def titles(node):
        if isinstance(node, dict):
            if node.get("type") == "quantitative" and "field" in node:
                axis = node.get("axis") or {}
                yield node.get("title") or axis.get("title") if axis is not None else "no axis"
            for value in node.values():
                yield from titles(value)
        elif isinstance(node, list):
            for value in node:
                yield from titles(value)

    units = ("tokens/s", "(tokens)", "(sequences)", "(%)", "(ms)", "no axis", None)
    for spec in specs:
        found = list(titles(spec))
        assert found, spec["description"]
        # Layers that reuse a panel's axis leave it unnamed; every named one carries a unit.
        assert all(t is None or any(u and u in t for u in units) for t in found), (spec["description"], found)
        assert any(t and any(u and u in t for u in units[:-2]) for t in found), spec["description"]


def test_report_shows_ceilings_fractions_and_hardware_sources():
    run = run_dict([_test("pp64", "pp", 64, 0, rate=300.0, ceilings=one_phase(PREFILL, 600.0, "compute", 300.0)),
                    _test("tg16", "tg", 0, 16, rate=30.0, ceilings=one_phase(DECODE, 25.0, "memory", 30.0))],
                   basis=BASIS)
    html = render_report([run, copy.deepcopy(run) | {"id": "b" * 32}])
    assert "of ceiling" in html and "50%" in html and "120% ⚠" in html  # above its ceiling: flagged
    assert "400 <span class=\"unit\">GB/s" in html and "https://www.apple.com/newsroom/x" in html
    assert "javascript:" not in html  # a stored link that is not a web link stays text
    assert "ridge point" in html and "predicted decode knee" in html
    assert "120% of memory bound (above ceiling: check figures)" in html  # the chart's note


@pytest.mark.parametrize("value, text", [(65006.9, "65,007"), (407.2, "407"), (37.06, "37.1"), (5.432, "5.43"),
                                         (None, "—")])
def test_rates_read_at_a_glance(value, text):
    from pdx.reports.labels import fmt_rate

    assert fmt_rate(value) == text


def test_serving_requests_become_ttft_and_itl_distributions():
    requests = [{"status": "ok", "first_ns": (10 + i) * 1_000_000,
                 "events": [[(10 + i) * 1_000_000, 1], [(12 + i) * 1_000_000, 1], [(15 + i) * 1_000_000, 1]]}
                for i in range(5)] + [{"status": "error", "first_ns": None, "events": []}]
    serve = {"name": "serve-c4", "kind": "serve", "n_prompt": 64, "n_gen": 16, "depth": 0, "batch": 1,
             "status": "ok", "error": None, "engine": {}, "stats": None, "requests": requests, "samples": []}
    run = run_dict([serve])
    assert run_rows(run) == []  # no pp/tg rows: a serving test is drawn from its requests
    ttft, itl = figures.latency_points([run], lambda r: "cpu")
    assert (ttft["metric"], ttft["n"], ttft["min"], ttft["p50"], ttft["max"]) == ("TTFT", 5, 10.0, 12.0, 14.0)
    assert (itl["metric"], itl["n"], itl["min"], itl["max"]) == ("ITL", 10, 2.0, 3.0)
    html = render_report([run])
    assert "Serving latency distributions" in html and "TTFT (ms)" in html
