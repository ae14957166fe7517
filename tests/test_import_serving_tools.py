"""GuideLLM's and AIPerf's files, recorded from the real tools against a real llama-server on this
machine (tests/data/README.md says how), imported as serving tests with a request record per
request; their figures agree with the tools' own; damaged files are one-line errors that store
nothing. tests/test_serving_tools.py runs the tools afresh (tox -e tools)."""

import json
import math
import shutil
import statistics
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import assert_one_line_error, pdx_here, pdx_import, run_pdx_here, show

DATA = Path(__file__).parent / "data"
GUIDELLM = DATA / "guidellm_concurrent.json"
GUIDELLM_POISSON = DATA / "guidellm_poisson.json"
AIPERF = DATA / "aiperf_profile_export.json"




def _successful(benchmark):
    return benchmark["requests"]["successful"]


def test_a_guidellm_concurrent_report_is_a_closed_loop_with_every_request(registry_url):
    report = json.loads(GUIDELLM.read_text())
    (run_id,) = pdx_import(registry_url, GUIDELLM)["added"]
    run = show(registry_url, run_id)
    assert run["origin"] == "guidellm" and run["backend"] == "openai"
    assert run["engine"]["details"]["tool"] == "guidellm 0.8.1"
    (test,) = run["tests"]
    (benchmark,) = report["benchmarks"]
    assert test["kind"] == "serve" and test["spec"]["concurrency"] == 2 and test["spec"]["scenario"] == "load"
    kept = _successful(benchmark)
    assert len(test["requests"]) == len(kept) == 8 and all(r["status"] == "ok" for r in test["requests"])
    for mine, theirs in zip(test["requests"], kept):
        assert mine["first_ns"] / 1e6 == pytest.approx(theirs["time_to_first_token_ms"], abs=1e-3)
        assert mine["end_ns"] / 1e9 == pytest.approx(theirs["request_latency"], abs=1e-6)
        assert (mine["n_prompt"], mine["n_gen"]) == (theirs["prompt_tokens"], theirs["output_tokens"])
    stats = test["stats"]
    summary = benchmark["metrics"]
    assert stats["ttft_ms"]["mean"] == pytest.approx(summary["time_to_first_token_ms"]["successful"]["mean"], rel=1e-6)
    # GuideLLM's percentiles are nearest-rank (pdx's, as vLLM's, interpolate): the same requests' values.
    ours = sorted(r["first_ns"] / 1e6 for r in test["requests"])
    for key, p in (("p25", 25), ("p50", 50), ("p90", 90), ("p99", 99)):
        theirs = summary["time_to_first_token_ms"]["successful"]["percentiles"][key]
        assert ours[math.ceil(p / 100 * len(ours)) - 1] == pytest.approx(theirs, abs=1e-3)
    assert stats["ttft_ms"]["median"] == pytest.approx(statistics.median(ours))
    # GuideLLM's ITL is a request's mean gap from its first to its last token (pdx's TPOT runs to the
    # request's end, as vLLM's); weighted by gaps, it is the mean of pdx's pooled ITL.
    for mine, theirs in zip(test["requests"], kept):
        gap = (mine["events"][-1][0] - mine["events"][0][0]) / (mine["n_gen"] - 1) / 1e6
        assert gap == pytest.approx(theirs["inter_token_latency_ms"], abs=1e-3)
    assert stats["itl_ms"]["mean"] == pytest.approx(summary["inter_token_latency_ms"]["successful"]["mean"], rel=1e-3)
    assert stats["output_throughput"] == pytest.approx(summary["output_tokens_per_second"]["successful"]["mean"],
                                                       rel=1e-3)
    assert test["engine"]["reported_by_tool"]["time_to_first_token_ms"]["p99"] > 0
    assert pdx_import(registry_url, GUIDELLM)["added"] == []  # twice adds nothing


def test_a_guidellm_poisson_report_keeps_each_requests_schedule(registry_url):
    (run_id,) = pdx_import(registry_url, GUIDELLM_POISSON)["added"]
    (test,) = show(registry_url, run_id)["tests"]
    assert test["spec"]["rate"] == 2.0 and test["spec"]["concurrency"] is None
    assert all(r["scheduled_ns"] is not None and r["scheduled_ns"] >= 0 for r in test["requests"])
    assert test["stats"]["ttft_sched_ms"]["n"] == 8
    shown = pdx_here("show", run_id, "--registry", registry_url)
    assert "imported from guidellm" in shown and "from the schedule" in shown


def test_an_aiperf_export_reads_its_records_beside_it(registry_url):
    export = json.loads(AIPERF.read_text())
    lines = [json.loads(line) for line in AIPERF.with_suffix(".jsonl").read_text().splitlines()]
    (run_id,) = pdx_import(registry_url, AIPERF)["added"]
    run = show(registry_url, run_id)
    (test,) = run["tests"]
    assert run["origin"] == "aiperf" and test["spec"]["rate"] == 4.0 and test["spec"]["max_concurrency"] == 2
    assert len(test["requests"]) == len(lines) == 8
    for mine, theirs in zip(test["requests"], lines):
        metrics = theirs["metrics"]
        assert mine["first_ns"] / 1e6 == pytest.approx(metrics["time_to_first_token"]["value"], abs=1e-6)
        assert mine["end_ns"] / 1e6 == pytest.approx(metrics["request_latency"]["value"], abs=1e-3)
        assert mine["n_gen"] == metrics["usage_completion_tokens"]["value"]  # the server's count
        assert mine["scheduled_ns"] <= mine["send_ns"]  # the credit comes before the send
    stats = test["stats"]
    assert stats["ttft_ms"]["mean"] == pytest.approx(export["time_to_first_token"]["avg"], rel=1e-6)
    assert stats["ttft_ms"]["p99"] == pytest.approx(export["time_to_first_token"]["p99"], rel=1e-3)
    assert stats["e2el_ms"]["mean"] == pytest.approx(export["request_latency"]["avg"], rel=1e-6)
    # The records file alone is the same import.
    assert pdx_import(registry_url, AIPERF.with_suffix(".jsonl"))["added"] == []


def test_summary_only_files_keep_the_tools_figures_as_reported(registry_url, tmp_path):
    report = json.loads(GUIDELLM.read_text())
    report["benchmarks"][0]["requests"] = {"successful": [], "errored": [], "incomplete": []}
    guidellm = tmp_path / "guidellm.json"
    guidellm.write_text(json.dumps(report))
    (run_id,) = pdx_import(registry_url, guidellm)["added"]
    (test,) = show(registry_url, run_id)["tests"]
    assert test["stats"]["reported"] and test["stats"]["completed"] == 8
    assert test["stats"]["ttft_ms"]["median"] == report["benchmarks"][0]["metrics"]["time_to_first_token_ms"][
        "successful"]["median"]
    alone = tmp_path / "alone" / "profile_export_aiperf.json"
    alone.parent.mkdir()
    shutil.copy(AIPERF, alone)
    (run_id,) = pdx_import(registry_url, alone)["added"]
    (test,) = show(registry_url, run_id)["tests"]
    assert test["requests"] == [] and test["stats"]["reported"] and test["stats"]["tpot_ms"]["mean"] > 0
    assert "as reported" in pdx_here("show", run_id, "--registry", registry_url)


def _damage(document, path, value):
    node = document
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return document


@pytest.mark.parametrize("path, value, needle", [
    (("benchmarks", 0, "requests", "successful", 0, "info", "timings", "first_token_iteration"), "soon", "not a "
     "number"),
    (("benchmarks", 0, "requests", "successful", 0, "output_tokens"), -8, "at least 0"),
    (("benchmarks", 0, "requests", "successful", 1, "info", "timings", "last_token_iteration"), 1.0, "out of order"),
    (("benchmarks", 0, "config", "strategy", "type_"), "lunar", "not one pdx reads"),
    (("benchmarks", 0, "duration"), float("nan"), "finite"),
])
def test_a_damaged_guidellm_report_is_one_line_and_stores_nothing(registry_url, tmp_path, path, value, needle):
    damaged = tmp_path / "report.json"
    damaged.write_text(json.dumps(_damage(json.loads(GUIDELLM.read_text()), path, value)))
    assert_one_line_error(run_pdx_here("import", str(damaged), "--registry", registry_url), needle)
    assert json.loads(pdx_here("runs", "--registry", registry_url, "--json")) == []


@pytest.mark.parametrize("line, needle", [
    ('{"metadata": {"request_start_ns": "late"}, "metrics": {}}', "not a time in nanoseconds"),
    ('{"metadata": {"request_start_ns": 5}, "metrics": {"time_to_first_token": {"value": 1, "unit": "furlong"}}}',
     "not a time unit"),
    ("{not json", "line 9 is not JSON"),
])
def test_a_damaged_aiperf_records_file_is_one_line_and_stores_nothing(registry_url, tmp_path, line, needle):
    shutil.copy(AIPERF, tmp_path / "profile_export_aiperf.json")
    (tmp_path / "profile_export.jsonl").write_text(AIPERF.with_suffix(".jsonl").read_text() + line + "\n")
    assert_one_line_error(run_pdx_here("import", str(tmp_path / "profile_export_aiperf.json"), "--registry",
                                       registry_url), needle)
    assert json.loads(pdx_here("runs", "--registry", registry_url, "--json")) == []


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                   max_size=3), max_leaves=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["info", "prompt_tokens", "output_tokens", "cached_tokens", "request_start_time"]), _JSON)
def test_any_value_in_a_guidellm_request_is_read_or_refused_in_one_line(tmp_path, key, value):
    from pdx.contract.errors import PdxError
    from pdx.registry.importers import read_file

    report = json.loads(GUIDELLM.read_text())
    report["benchmarks"][0]["requests"]["successful"][0][key] = value
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    try:
        read_file(path)
    except PdxError as exc:
        assert "\n" not in str(exc)


def test_a_guidellm_request_that_failed_before_it_was_sent_is_kept_as_failed(registry_url, tmp_path):
    report = json.loads(GUIDELLM.read_text())
    benchmark = report["benchmarks"][0]
    failed = benchmark["requests"]["successful"].pop()
    failed["info"] |= {"status": "errored", "error": "Connection refused", "timings": {"request_start": None}}
    failed.pop("request_start_time", None)
    benchmark["requests"]["errored"] = [failed]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    (run_id,) = pdx_import(registry_url, path)["added"]
    (test,) = show(registry_url, run_id)["tests"]
    assert [r["status"] for r in test["requests"]].count("error") == 1
    assert test["error"] == "1 of 8 requests failed: Connection refused" and test["stats"]["completed"] == 7
