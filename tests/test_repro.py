"""Rerun, adaptive repetitions and the regression gate on real llama.cpp.

The machine has 2 cores shared with other work, so these tests assert what
holds however busy it is (links, settings, samples, exit codes that follow the
verdicts), never that one run was faster than another: those figures are
printed by tests/benchmarks/reproducibility.py.
"""

import json
import math

import pytest

from pdx.domain.synth import get_shape, write_gguf

from conftest import assert_one_line_error, run_pdx

pytestmark = pytest.mark.llamacpp

SMALL = ("-p", "256", "-n", "32", "-r", "5")  # the default ~100M model: about a second per repetition


def bench(registry_url, *args) -> dict:
    result = run_pdx("bench", "--registry", registry_url, "--json", *args)
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    return run


def stats(run, name):
    test = next(t for t in run["tests"] if t["name"] == name)
    assert test["status"] == "ok", test["error"]
    return test["stats"]["rate"]


def test_rerun_repeats_the_run_and_links_it(registry_url):
    """The rerun is the same run again (backend, threads, options, workload, model), linked to the
    first; both measured every test. How closely the figures agree is a benchmark's result
    (tests/benchmarks/reproducibility.py prints it): other work on the cores moves them."""
    first = bench(registry_url, *SMALL, "-t", "1")
    result = run_pdx("rerun", first["id"][:10], "--registry", registry_url, "--json")
    assert result.returncode == 0, result.stderr
    second = json.loads(result.stdout)
    assert second["parent_id"] == first["id"] and second["provenance"] == {"rerun_of": first["id"], "drift": {}}
    for key in ("backend", "threads", "options", "workload"):
        assert second[key] == first[key]
    assert second["model"]["sha256"] == first["model"]["sha256"]
    for run in (first, second):
        assert [t["name"] for t in run["tests"]] == ["pp256", "tg32"]
        for test in run["tests"]:
            assert len(test["samples"]) == 5 and 0 < stats(run, test["name"])["mean"] < math.inf
    for name in ("pp256", "tg32"):
        old, new = stats(first, name), stats(second, name)
        print(f"{name}: first {old['mean']:.1f} ± {old['ci95']:.1f}, rerun {new['mean']:.1f}")


def test_rerun_refuses_drift_unless_allowed(registry_url, tmp_path):
    model = write_gguf(get_shape("tiny"), "f16", tmp_path / "m.gguf")
    first = bench(registry_url, "-m", str(model), "-p", "16", "-n", "4", "-r", "2", "-t", "1")
    write_gguf(get_shape("tiny"), "f16", model, seed=7)  # same name, other weights
    line = assert_one_line_error(run_pdx("rerun", first["id"], "--registry", registry_url),
                                 "cannot rerun", "model.sha256 was", "--allow-drift")
    assert first["model"]["sha256"][:12] in line
    result = run_pdx("rerun", first["id"], "--allow-drift", "--registry", registry_url, "--json")
    assert result.returncode == 0, result.stderr
    drift = json.loads(result.stdout)["provenance"]["drift"]
    assert list(drift) == ["model.sha256"] and drift["model.sha256"]["was"] == first["model"]["sha256"]
    model.unlink()
    assert_one_line_error(run_pdx("rerun", first["id"], "--registry", registry_url), "is gone", "--model")


def test_adaptive_repetitions_on_tg128(registry_url):
    run = bench(registry_url, "--backend", "llamacpp-bench", "-p", "0", "-n", "128", "-r", "auto",
                "--target-ci", "2%", "--max-repetitions", "12", "-t", "1")
    (test,) = run["tests"]
    adaptive = test["adaptive"]
    print(f"tg128: {adaptive}")
    assert run["workload"]["target_ci"] == 0.02 and run["workload"]["max_repetitions"] == 12
    assert adaptive["repetitions"] == len(test["samples"]) >= 3
    assert adaptive["achieved_ci"] == pytest.approx(test["stats"]["rate"]["ci95"] / test["stats"]["rate"]["mean"])
    if adaptive["stopped_by"] == "target":
        assert adaptive["achieved_ci"] <= 0.02
    else:
        assert adaptive["repetitions"] == 12 and adaptive["achieved_ci"] > 0.02
    if adaptive["calls"] > 1:  # continuation calls of llama-bench run without its warm-up
        assert "--no-warmup" in test["engine"]["command"]
    shown = run_pdx("show", run["id"], "--registry", registry_url).stdout
    assert f"n={adaptive['repetitions']}" in shown and "repeated to a 2.0% CI" in shown


def test_check_on_real_runs_exits_as_its_verdict(registry_url):
    """pdx check of a real run against a real baseline (2 threads, then 1): the run and baseline it
    chose, a verdict per test, and an exit code and summary that follow the verdicts. Whether 1 thread
    is significantly slower here depends on what else holds the cores (tests/benchmarks/reproducibility.py
    prints the gate's verdicts; tests/test_gate.py checks both exit codes on known samples)."""
    dual = bench(registry_url, *SMALL, "-t", "2", "--tag", "dual")
    single = bench(registry_url, *SMALL, "-t", "1")
    checked = run_pdx("check", "--baseline", "dual", "--factor", "1.25", "--registry", registry_url, "--json")
    result = json.loads(checked.stdout)
    print(json.dumps(result["tests"], indent=1))
    assert (result["run"], result["baseline"]) == (single["id"], dual["id"])
    marks = {t["name"]: t["mark"] for t in result["tests"]}
    assert set(marks) == {"pp256", "tg32"} and set(marks.values()) <= {"+", "-", "~", " "}
    slower = sum(mark == "+" for mark in marks.values())
    assert result["passed"] == (slower == 0) and checked.returncode == (1 if slower else 0)
    text = run_pdx("check", "--baseline", "dual", "--factor", "1.25", "--registry", registry_url).stdout
    assert (f"{slower} regression(s)" if slower else "no significant regression") in text
