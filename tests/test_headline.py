"""One rule for a run's headline pp and tg tests (pdx.domain.headline): `pdx runs`, the site's run
listings and the hub's estimates name the same test, measured at depth 0 and batch 1, whatever
order the run measured its tests in."""

from __future__ import annotations

import random

from pdx.domain.headline import headline_test
from pdx.registry import Registry
from pdx.reports import groups
from pdx.reports.hub import hubdata
from pdx.reports.results import read_runs
from pdx.domain.workload import TestSpec

from conftest import run_pdx
from runfactory import START, add_run, hardware, model

# the depth and batch tests first: a rule that took the first test of a kind would name them
TESTS = [TestSpec(512, 0, depth=4096), TestSpec(0, 128, depth=4096), TestSpec(0, 128, batch=4), TestSpec(128, 0),
         TestSpec(512, 0), TestSpec(0, 32), TestSpec(0, 128)]


def _run(tests: list[dict]) -> dict:
    return {"tests": tests}


def _test(name, kind, n_prompt=0, depth=0, batch=1, status="ok", rate=10.0):
    return {"name": name, "kind": kind, "n_prompt": n_prompt, "depth": depth, "batch": batch, "status": status,
            "stats": {"rate": {"mean": rate}} if rate else {}}


def test_the_headline_is_measured_at_depth_0_and_batch_1():
    run = _run([_test("pp512@d4096", "pp", 512, depth=4096), _test("pp128", "pp", 128), _test("pp512", "pp", 512),
                _test("pp2048", "pp", 2048, status="failed"), _test("tg32", "tg"), _test("tg128", "tg"),
                _test("tg128/b4", "tg", batch=4)])
    assert headline_test(run, "pp")["name"] == "pp512"  # the most prompt tokens that were measured
    assert headline_test(run, "tg")["name"] == "tg128"  # llama-bench's classic row before the first
    assert headline_test(_run([_test("tg32", "tg"), _test("tg64", "tg")]), "tg")["name"] == "tg32"
    only_deep = _run([_test("pp512@d4096", "pp", 512, depth=4096), _test("tg128", "tg", rate=None)])
    assert headline_test(only_deep, "pp") is None and headline_test(only_deep, "tg") is None


def test_pdx_list_and_the_hub_name_the_same_headline(tmp_path):
    url = f"sqlite:///{tmp_path / 'registry.sqlite'}"
    registry = Registry(url)
    try:
        add_run(registry, hardware("Apple M2 Max", 0), model("llama-8b-q4_0", 1), "llamacpp-bench", START,
                random.Random(0), TESTS)
        (run,) = read_runs(registry, samples=True)
    finally:
        registry.close()
    prefill, decode = hubdata.headline_figures(run)
    assert (prefill["test"], decode["test"]) == ("pp512", "tg128")
    shown = run_pdx("runs", "--registry", url, env={"COLUMNS": "250"})
    assert shown.returncode == 0, shown.stderr
    pp_rate, tg_rate = hubdata.headline_rates(run)
    assert f"pp512 {pp_rate:.1f}" in shown.stdout and f"tg128 {tg_rate:.1f}" in shown.stdout
    assert "@d4096" not in shown.stdout and "/b4" not in shown.stdout
    candidates = {name for _, name, _ in groups.headline_candidates(run)}
    assert candidates == {"pp128", "pp512", "tg32", "tg128"}
