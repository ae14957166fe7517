"""Comparison statistics, noise flags and the adaptive stop rule (no engine)."""

import math
import random

import pytest

from pdx.domain.adaptive import StopRule, relative_ci
from pdx.contract.backend import Sample
from pdx.reports.sample_compare import compare_runs, compare_tests, mann_whitney_u, smallest_p
from pdx.reports.results import derive_stats
from pdx.measure.runner import run_tests
from pdx.domain.stats import outliers
from pdx.domain.workload import TestSpec


@pytest.mark.parametrize("a, b, u, p", [
    # Exact two-sided p-values, checked against the textbook U distribution.
    ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], 0, 2 / 252),
    ([1, 2, 3], [4, 5, 6], 0, 0.1),
    ([1, 3, 5, 7], [2, 4, 6, 8], 6, 0.6857142857),
    ([10, 20], [1, 2, 3], 6, 0.2),
])
def test_mann_whitney_exact(a, b, u, p):
    got_u, got_p = mann_whitney_u(a, b)
    assert got_u == u and got_p == pytest.approx(p)


def test_mann_whitney_is_symmetric_and_handles_ties_and_large_samples():
    rng = random.Random(1)
    a = [rng.gauss(100, 5) for _ in range(40)]
    b = [rng.gauss(110, 5) for _ in range(40)]
    u_ab, p_ab = mann_whitney_u(a, b)
    u_ba, p_ba = mann_whitney_u(b, a)
    assert u_ab + u_ba == 40 * 40 and p_ab == pytest.approx(p_ba) and p_ab < 1e-6
    _, p_same = mann_whitney_u([5, 5, 5], [5, 5, 5])
    assert p_same == 1.0
    _, p_ties = mann_whitney_u([1, 1, 2, 2, 3], [3, 4, 4, 5, 5])
    assert 0.005 < p_ties < 0.05


def test_smallest_p_says_when_samples_are_too_few():
    assert smallest_p(3, 3) == pytest.approx(0.1)
    assert smallest_p(5, 5) < 0.01


def _test(name, ns, status="ok", n_prompt=512, n_gen=0):
    return {"name": name, "status": status, "error": None, "n_prompt": n_prompt, "n_gen": n_gen, "batch": 1,
            "samples": [{"ns": v} for v in ns]}


def test_marks_follow_asv():
    base = _test("pp512", [100, 101, 102, 103, 104])
    slower = compare_tests(base, _test("pp512", [200, 201, 202, 203, 204]))
    assert slower.mark == "+" and slower.regression and slower.ratio == pytest.approx(202 / 102, rel=1e-3)
    faster = compare_tests(base, _test("pp512", [50, 51, 52, 53, 54]))
    assert faster.mark == "-" and not faster.regression
    within = compare_tests(base, _test("pp512", [102, 103, 104, 105, 106]))
    assert within.mark == " "  # significant, but under the 5% factor
    few = compare_tests(_test("tg8", [100, 101, 102], n_prompt=0, n_gen=8),
                        _test("tg8", [200, 201, 202], n_prompt=0, n_gen=8))
    assert few.mark == "~" and "cannot reach" in few.note
    failed = compare_tests(base, _test("pp512", [], status="failed"))
    assert failed.mark == "!" and failed.regression
    assert compare_tests(base, None).mark == "x"


def test_runs_are_matched_by_test_name():
    base = {"tests": [_test("pp512", [100] * 5), _test("tg128", [100] * 5, n_prompt=0, n_gen=128)]}
    new = {"tests": [_test("tg128", [100] * 5, n_prompt=0, n_gen=128), _test("pp1024", [100] * 5)]}
    assert [(c.name, c.mark) for c in compare_runs(base, new)] == [("pp512", "x"), ("tg128", " "), ("pp1024", "x")]


def test_outliers_are_marked_not_dropped():
    times = [100, 101, 99, 100, 102, 250]
    assert outliers(times) == [5]
    assert outliers([1, 2, 100]) == []  # too few to tell
    stats = derive_stats({"kind": "pp", "n_prompt": 10, "n_gen": 0, "batch": 1,
                          "samples": [{"ns": t} for t in times]})
    assert stats["outliers"] == [5] and stats["rate"]["n"] == 6 and stats["cv"] > 0.2


def samples_with_cv(n, cv, seed=0):
    rng = random.Random(seed)
    return [Sample(ns=max(1, int(rng.gauss(1e6, 1e6 * cv))), n_prompt=0, n_gen=8) for _ in range(n)]


def test_stop_rule_stops_at_the_target_or_the_cap():
    test = TestSpec(0, 8)
    rule = StopRule(target_ci=0.02, max_repetitions=20)
    quiet = samples_with_cv(3, 0.001)
    assert rule.more(test, quiet) == 0 and rule.record(test, quiet, 1)["stopped_by"] == "target"
    noisy = samples_with_cv(3, 0.05)
    more = rule.more(test, noisy)
    assert 1 <= more <= 3  # planned from the spread, at most doubling
    capped = samples_with_cv(20, 0.5)
    assert rule.more(test, capped) == 0 and rule.record(test, capped, 4)["stopped_by"] == "cap"
    assert math.isinf(relative_ci(test, capped[:1]))


class Recorder:
    """A backend stand-in that records how the runner calls it (the contract
    under test is the runner's); its samples have a chosen spread."""

    def __init__(self, cv):
        self.calls, self.cv, self.seed = [], cv, 0

    def unsupported(self, test):
        return None

    def run(self, test, repetitions, warmup):
        self.calls.append((repetitions, warmup))
        self.seed += 1
        return iter(samples_with_cv(repetitions, self.cv, self.seed))

    def test_info(self):
        return {}


def test_adaptive_runner_continues_without_warmup_and_records_its_stop():
    backend, saved = Recorder(cv=0.04), []
    rule = StopRule(target_ci=0.02, max_repetitions=40)
    (outcome,) = run_tests(backend, [TestSpec(0, 8)], 3, 2, save=saved.append, rule=rule)
    assert backend.calls[0] == (3, 2) and all(w == 0 for _, w in backend.calls[1:]) and len(backend.calls) > 1
    assert len(outcome.samples) == sum(n for n, _ in backend.calls) == outcome.adaptive["repetitions"]
    assert outcome.adaptive["calls"] == len(backend.calls)
    assert outcome.adaptive["stopped_by"] == "target" and outcome.adaptive["achieved_ci"] <= 0.02
    assert saved == [outcome]


def test_fixed_runs_call_the_backend_once():
    backend = Recorder(cv=0.5)
    (outcome,) = run_tests(backend, [TestSpec(0, 8)], 5, 1, save=lambda o: None)
    assert backend.calls == [(5, 1)] and outcome.adaptive is None
