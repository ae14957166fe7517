"""`pdx bench -r auto` -> `pdx submit` -> `pdx hub verify` -> `pdx publish --bundles`, whole.

An adaptive llama-bench test is several llama-bench calls (3 repetitions, then more), each
reporting its own ``avg_ts``; pdx once stored the last call's as the test's, so the hub's verify
rejected what submit had accepted. A test's figures now come from all its stored samples, in one
place, and submit refuses what verify would. The unit test replays recorded llama-bench output
(tests/recorded_llama_bench.py); the ``llamacpp`` one runs the real binary.
"""

from __future__ import annotations

import copy
import json
import statistics
import sys
from pathlib import Path

import pytest
from conftest import pdx_import, run_pdx_here

from pdx.domain import headline
from pdx.api.contrib.submit import refusals
from pdx.api.contrib.plausible import SAMPLE_TOLERANCE, rate_problems
from pdx.registry import Registry
from pdx.reports.results import with_stats

RECORDED = Path(__file__).with_name("recorded_llama_bench.py")
RECORDING = Path(__file__).with_name("data") / "llama_bench_tiny.jsonl"
CATALOG_CHIP = "Apple M2 Max"  # ceilings far above a tiny model's rates on any CPU: only the samples are judged


def summaries(test: dict) -> dict:
    """llama-bench's summary figures stored with a test: each covers one call, not the test."""
    return {k: v for k, v in test["engine"].items() if k.startswith(("avg_", "stddev_"))}


def bench_to_site(tmp_path: Path, model: Path, *bench_args: str) -> tuple[dict, dict]:
    """The whole path on the real CLI; the run as `pdx bench --json` printed it, and its published row."""
    url = f"sqlite:///{tmp_path / 'mine.sqlite'}"
    benched = run_pdx_here("bench", "--registry", url, "--backend", "llamacpp-bench", "-m", str(model),
                           "-r", "auto", "--hardware", CATALOG_CHIP, "--json", *bench_args)
    assert benched.returncode == 0, benched.stderr
    (run,) = json.loads(benched.stdout)
    hub = tmp_path / "results"
    submitted = run_pdx_here("submit", "--registry", url, "-o", str(hub), "--max-cv", "100%")
    assert submitted.returncode == 0, submitted.stderr
    verified = run_pdx_here("hub", "verify", str(hub))
    assert verified.returncode == 0, verified.stdout
    assert "1 file(s), 1 run(s): no problem(s)" in verified.stdout
    site = tmp_path / "site"
    published = run_pdx_here("publish", str(site), "--bundles", str(hub), "--title", "hub")
    assert published.returncode == 0, published.stderr
    (page,) = (site / "models").glob("*.json")
    board = json.loads(page.read_text())
    assert (site / "runs" / f"{run['id']}.html").exists()
    if headline.left_out(run):  # noisy beyond 5% (submitted at the CV stated): on no leaderboard, and said
        assert board["leaderboard"] == [] and board["left_out"] == f"1 run left out: {headline.left_out(run)}"
        published = json.loads((site / "runs" / f"{run['id']}.json").read_text())["run"]
        rates = {t["kind"]: t["stats"]["rate"] for t in published["tests"]}
        return run, {phase: {"rate": rates[kind]["mean"], "n": rates[kind]["n"]}
                     for phase, kind in (("prefill", "pp"), ("decode", "tg")) if kind in rates}
    (row,) = board["leaderboard"]
    assert row["runs"] == 1
    return run, row


def test_an_adaptive_llama_bench_run_passes_submit_verify_and_publish(tmp_path, tiny_gguf):
    """Recorded llama-bench output replayed: the test's 6 repetitions come from two llama-bench calls
    whose own avg_ts are each more than verify's 1% from the mean of all six."""
    shim = tmp_path / "llama-bench"
    (tmp_path / "state").mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{RECORDED}" "{tmp_path / "state"}" "$@"\n')
    shim.chmod(0o755)
    calls = [json.loads(line) for line in RECORDING.read_text().splitlines()]
    calls = [c for c in calls if (c["n_prompt"], c["n_gen"]) == (16, 0)]
    recorded_ts = [ts for c in calls for ts in c["samples_ts"]]
    assert all(abs(c["avg_ts"] / statistics.mean(recorded_ts) - 1) > SAMPLE_TOLERANCE for c in calls)

    run, row = bench_to_site(tmp_path, tiny_gguf, "--llama-bench", str(shim), "-p", "16", "-n", "0",
                             "--max-repetitions", "6", "--target-ci", "0.1%")
    (test,) = run["tests"]
    assert test["adaptive"]["calls"] == 2
    assert [s["ns"] for s in test["samples"]] == [ns for c in calls for ns in c["samples_ns"]]
    assert [s["engine"]["ts"] for s in test["samples"]] == recorded_ts  # llama-bench's own, per repetition
    assert not summaries(test)
    # One mean, from every repetition of both calls: what pdx shows, what the ceiling judged, what the site
    # publishes, and llama-bench's own per-repetition rates agree.
    mean = test["stats"]["rate"]["mean"]
    assert mean == test["ceilings"]["measured"] == row["prefill"]["rate"] and row["prefill"]["n"] == 6
    assert mean == pytest.approx(statistics.mean(recorded_ts), rel=1e-5)


def _imported(tmp_path: Path, tiny_gguf: Path) -> dict:
    url = f"sqlite:///{tmp_path / 'imported.sqlite'}"
    added = pdx_import(url, RECORDING, "-m", str(tiny_gguf))["added"]
    registry = Registry(url)
    try:
        return with_stats(registry.records([added[0]])[0])
    finally:
        registry.close()


def test_a_stored_avg_ts_is_checked_where_it_summarises_the_samples(tmp_path, tiny_gguf):
    """An imported llama-bench record's avg_ts is the mean of its samples: one that is not is caught, by
    verify and by submit alike. An earlier pdx's own llama-bench run kept its last call's avg_ts,
    which summarises other repetitions: not a figure of the stored samples, so not held against them."""
    record = _imported(tmp_path, tiny_gguf)
    assert record["origin"] != "pdx" and rate_problems(record) == []
    forged = copy.deepcopy(record)
    forged["tests"][0]["engine"]["avg_ts"] *= 1.05
    (problem,) = rate_problems(forged)
    assert f"{forged['tests'][0]['name']}: llama-bench's avg_ts" in problem and "is not its samples' mean" in problem
    assert problem in refusals(forged, max_cv=10.0)  # submit refuses it with verify's own words
    assert rate_problems(forged | {"origin": "pdx"}) == []


@pytest.mark.llamacpp
def test_a_real_adaptive_llama_bench_run_passes_submit_verify_and_publish(tmp_path, tiny_gguf):
    """The real llama-bench, adaptive (several calls per test) and with two warm-ups (llama-bench runs
    one more repetition that pdx drops): every figure is the mean of the repetitions pdx kept."""
    run, row = bench_to_site(tmp_path, tiny_gguf, "-p", "64", "-n", "16", "-t", "1", "--warmup", "2",
                             "--max-repetitions", "12", "--target-ci", "0.1%")
    for test in run["tests"]:
        assert test["status"] == "ok" and test["adaptive"]["calls"] > 1
        assert len(test["samples"]) == test["adaptive"]["repetitions"] and not summaries(test)
        mean = test["stats"]["rate"]["mean"]
        assert mean == test["ceilings"]["measured"]
        assert mean == pytest.approx(statistics.mean(s["engine"]["ts"] for s in test["samples"]), rel=1e-4)
    rates = {test["name"]: test["stats"]["rate"]["mean"] for test in run["tests"]}
    assert (row["prefill"]["rate"], row["decode"]["rate"]) == (rates["pp64"], rates["tg16"])
