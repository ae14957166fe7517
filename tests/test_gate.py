"""pdx check's choice of runs and its exit codes, on stored samples (no engine;
tests/test_repro.py does it on real llama.cpp runs)."""

import dataclasses
import json
from datetime import datetime, timedelta, timezone

from pdx.domain.models import identify
from pdx.registry import Registry
from pdx.reports.gate import EXIT_NOTHING_COMPARED, EXIT_REGRESSION
from pdx.domain.workload import TestSpec

from conftest import assert_one_line_error, run_pdx_here
from test_registry import make_start, outcome

PP, TG = TestSpec(64, 0), TestSpec(0, 16)
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def store(url, model, base_ns, tags=(), tests=(PP, TG), hour=None, backend=None, failed=()):
    """A complete run of ``tests`` (each repetition near ``base_ns``, doubled for decode), made
    ``hour`` hours after T0 (default: now), its tests named in ``failed`` failed."""
    registry = Registry(url)
    start = make_start(model, tags=tags)
    if hour is not None:
        start = dataclasses.replace(start, created_at=T0 + timedelta(hours=hour))
    if backend:
        start = dataclasses.replace(start, backend=backend)
    run_id = registry.start_run(start)
    for ordinal, spec in enumerate(tests):
        result = outcome(ordinal, spec, n=5, base=base_ns * (2 if spec.n_gen else 1))
        if spec.name in failed:
            result.samples, result.status, result.error = [], "failed", "engine crashed"
        registry.save_test(run_id, result.to_record())
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


def test_runs_with_no_test_in_common_have_no_verdict(registry_url, tiny_gguf):
    """A gate that compared nothing is not a pass: its own exit code, and one line saying why."""
    model = identify(tiny_gguf)
    base = store(registry_url, model, 1_000_000)
    other = store(registry_url, model, 1_000_000, tests=(TestSpec(512, 0), TestSpec(0, 128, depth=4096)))
    for extra in ((), ("--json",)):
        result = check(registry_url, "--baseline", base, other, *extra)
        assert result.returncode == EXIT_NOTHING_COMPARED and not result.stdout
        assert_one_line_error(result, "nothing compared", "no test in common", "baseline: pp64, tg16",
                              "run: pp512, tg128@d4096", base[:12], other[:12])


def test_tests_in_common_that_cannot_be_compared_have_no_verdict(registry_url, tiny_gguf):
    model = identify(tiny_gguf)
    base = store(registry_url, model, 1_000_000, tests=(PP,), failed=("pp64",))
    run = store(registry_url, model, 1_000_000, tests=(PP,))
    result = check(registry_url, "--baseline", base, run)
    assert result.returncode == EXIT_NOTHING_COMPARED
    assert_one_line_error(result, "nothing compared", "pp64: no raw samples on both sides")
    # One test compared is a verdict: the other, only in one run, is listed as "x".
    both = store(registry_url, model, 1_000_000, tests=(PP, TG))
    partial = json.loads(check(registry_url, "--baseline", run, both, "--json").stdout)
    assert [(t["name"], t["mark"]) for t in partial["tests"]] == [("pp64", " "), ("tg16", "x")]
    # A test that failed where the baseline passed is compared: a regression, not "nothing".
    crashed = store(registry_url, model, 1_000_000, tests=(PP,), failed=("pp64",))
    assert check(registry_url, "--baseline", run, crashed).returncode == EXIT_REGRESSION


def test_a_tag_is_its_newest_matching_run_older_than_the_run_checked(registry_url, tiny_gguf):
    model = identify(tiny_gguf)
    first = store(registry_url, model, 1_000_000, tags=("main",), hour=0)
    second = store(registry_url, model, 1_000_000, tags=("main",), hour=1)
    store(registry_url, model, 1_000_000, tags=("main",), hour=2, backend="other-backend")  # not the same setup
    candidate = store(registry_url, model, 1_000_000, hour=3)
    store(registry_url, model, 1_000_000, tags=("main",), hour=4)  # newer than the run checked

    def chosen(*args):
        result = check(registry_url, "--baseline", "main", *args, "--json")
        assert result.returncode == 0, result.stderr
        found = json.loads(result.stdout)
        return found["baseline"], found["run"]

    assert chosen(candidate) == (second, candidate)
    assert chosen() == (second, candidate)  # the newest untagged run, against the tag's run before it
    assert chosen(second) == (first, second)  # a tagged run checked: the tag's run before it, never itself
    refused = check(registry_url, "--baseline", "main", first)
    assert refused.returncode == EXIT_NOTHING_COMPARED
    assert_one_line_error(refused, "no run tagged 'main'", "is older than run", first[:12])


def test_the_exit_codes_are_documented():
    text = " ".join(run_pdx_here("check", "--help").stdout.split())
    assert f"{EXIT_REGRESSION} a test is significantly slower" in text
    assert f"{EXIT_NOTHING_COMPARED} nothing compared" in text


def test_compare_of_runs_without_a_common_test_has_no_verdict(registry_url, tiny_gguf, monkeypatch):
    """`pdx compare` shares check's rule: nothing compared is said, and is not a pass (exit 3)."""
    monkeypatch.setenv("COLUMNS", "120")
    model = identify(tiny_gguf)
    base = store(registry_url, model, 1_000_000)
    other = store(registry_url, model, 1_000_000, tests=(TestSpec(512, 0),))
    result = run_pdx_here("compare", "--registry", registry_url, base, other)
    assert result.returncode == EXIT_NOTHING_COMPARED
    assert "no significant regression" not in result.stdout
    assert_one_line_error(result, "nothing compared", "no test in common", "run: pp512")
    same = store(registry_url, model, 1_000_000)
    compared = run_pdx_here("compare", "--registry", registry_url, base, same)
    assert compared.returncode == 0 and "no significant regression" in compared.stdout
