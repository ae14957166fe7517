"""Rerun, adaptive repetitions and the regression gate on real llama.cpp.

The machine has 2 cores shared with other work, so these tests are built to
hold under noise: single-thread runs where only a repeat is compared (one
busy core does not halve them), a 2-thread vs 1-thread slowdown (about 2x)
for the gate, and a factor of 1.25 rather than the default 1.05.
"""

import json

import pytest

from pdx.synth import get_shape, write_gguf

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


def test_rerun_reproduces_and_links(registry_url):
    misses = ["not run"]
    for _ in range(3):  # other work on the shared cores can spoil a pair of runs; three in a row is a finding
        first = bench(registry_url, *SMALL, "-t", "1")
        result = run_pdx("rerun", first["id"][:10], "--registry", registry_url, "--json")
        assert result.returncode == 0, result.stderr
        second = json.loads(result.stdout)
        assert second["parent_id"] == first["id"] and second["provenance"] == {"rerun_of": first["id"], "drift": {}}
        for key in ("backend", "threads", "options", "workload"):
            assert second[key] == first[key]
        assert second["model"]["sha256"] == first["model"]["sha256"]
        misses = []
        for name in ("pp256", "tg32"):
            old, new = stats(first, name), stats(second, name)
            allowed = max(old["ci95"], 0.10 * old["mean"])
            print(f"{name}: first {old['mean']:.1f} ± {old['ci95']:.1f}, rerun {new['mean']:.1f}")
            if abs(new["mean"] - old["mean"]) > allowed:
                misses.append(f"{name}: {old['mean']:.1f} ± {old['ci95']:.1f}, then {new['mean']:.1f}")
        if not misses:
            break
    assert not misses, misses


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


def median_rate(run, name):
    return stats(run, name)["median"]


def test_check_passes_a_repeat(registry_url):
    for attempt in range(3):  # a repeat can be disturbed by other work; it must pass on a quiet try
        bench(registry_url, *SMALL, "-t", "1", "--tag", f"single{attempt}")
        bench(registry_url, *SMALL, "-t", "1")
        same = run_pdx("check", "--baseline", f"single{attempt}", "--factor", "1.25", "--registry", registry_url)
        print(same.stdout)
        if same.returncode == 0:
            break
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no significant regression" in same.stdout


def test_check_fails_on_fewer_threads(registry_url):
    # Two threads must really beat one while we measure: a core taken by other
    # work can stall a 2-thread llama.cpp run below a 1-thread one.
    for attempt in range(3):
        dual = bench(registry_url, *SMALL, "-t", "2", "--tag", f"dual{attempt}")
        single = bench(registry_url, *SMALL, "-t", "1")
        speedups = [median_rate(dual, n) / median_rate(single, n) for n in ("pp256", "tg32")]
        print(f"2 threads vs 1: pp {speedups[0]:.2f}x, tg {speedups[1]:.2f}x")
        if min(speedups) >= 1.4:
            break
    else:
        pytest.fail(f"2 threads never beat 1 by 1.4x in 3 tries (last {speedups}): the cores are too busy")
    slower = run_pdx("check", "--baseline", f"dual{attempt}", "--factor", "1.25", "--registry", registry_url, "--json")
    result = json.loads(slower.stdout)
    print(json.dumps(result["tests"], indent=1))
    assert slower.returncode == 1 and result["run"] == single["id"] and not result["passed"]
    assert {t["name"]: t["mark"] for t in result["tests"]} == {"pp256": "+", "tg32": "+"}
    text = run_pdx("check", "--baseline", f"dual{attempt}", "--factor", "1.25", "--registry", registry_url).stdout
    assert "2 regression(s)" in text and "\n+ " in text
