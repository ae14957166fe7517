"""pdx check's choice of runs and its exit codes, on stored samples (no engine;
tests/test_repro.py does it on real llama.cpp runs)."""

import json

from pdx.models import identify
from pdx.registry import Registry
from pdx.workload import TestSpec

from conftest import assert_one_line_error, run_pdx_here
from test_registry import make_start, outcome


def store(url, model, base_ns, tags=()):
    registry = Registry(url)
    run_id = registry.start_run(make_start(model, tags=tags))
    registry.save_test(run_id, outcome(0, TestSpec(64, 0), n=5, base=base_ns))
    registry.save_test(run_id, outcome(1, TestSpec(0, 16), n=5, base=base_ns * 2))
    registry.finish_run(run_id, "complete")
    registry.close()
    return run_id


def check(url, *args):
    return run_pdx_here("check", "--registry", url, *args)


def test_check_exit_codes_and_run_choice(registry_url, tiny_gguf):
    model = identify(tiny_gguf)
    base = store(registry_url, model, 1_000_000, tags=("main",))
    same = store(registry_url, model, 1_000_000)
    passed = check(registry_url, "--baseline", "main")
    assert passed.returncode == 0 and "no significant regression" in passed.stdout
    slow = store(registry_url, model, 2_000_000)
    failed = check(registry_url, "--baseline", "main", "--json")
    result = json.loads(failed.stdout)
    assert failed.returncode == 1 and result["run"] == slow and result["baseline"] == base
    assert [t["mark"] for t in result["tests"]] == ["+", "+"]
    # A named run, and a baseline named by id; a newer run with the baseline's tag is not the candidate.
    assert check(registry_url, "--baseline", base[:8], same).returncode == 0
    store(registry_url, model, 1_000_000, tags=("main",))
    assert json.loads(check(registry_url, "--baseline", "main", "--json").stdout)["run"] == slow
    assert check(registry_url, "--baseline", slow, "--factor", "3").returncode == 0  # faster: not a regression


def test_check_errors_are_one_line(registry_url, tiny_gguf):
    assert_one_line_error(check(registry_url, "--baseline", "nosuch"), "no run or tag 'nosuch'")
    only = store(registry_url, identify(tiny_gguf), 1_000_000)
    assert_one_line_error(check(registry_url, "--baseline", only), "no other run of model")
    assert_one_line_error(check(registry_url, "--baseline", only, only), "is the baseline itself")
    assert_one_line_error(check(registry_url, "--baseline", only, "--factor", "0.9"), "--factor 0.9 is below 1")
