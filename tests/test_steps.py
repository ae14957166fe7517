"""Step detection (pdx.domain.stats.steps): a planted step is found at its version, noise alone has none.

Series here are built from the samples of a real llama-bench run on an NVIDIA H200 (tests/data/h200/,
recorded there: see its README), cut into runs of ten repetitions, and from seeded noise around known
levels; tests/test_history.py finds a step planted in real pdx runs stored in a registry."""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import given, settings, strategies as st

from pdx.reports.history import version_key
from pdx.domain.stats.steps import Point, detect_steps


def series(levels: list[float], seed: int = 0, run_sd: float = 0.01, within: float = 0.01) -> list[Point]:
    rng = random.Random(seed)
    out = []
    for i, level in enumerate(levels):
        mean = level * (1 + rng.gauss(0, run_sd))
        out.append(Point.of(f"v{i}", tuple(mean * (1 + rng.gauss(0, within)) for _ in range(5))))
    return out


H200 = Path(__file__).parent / "data" / "h200" / "llama-bench-cuda-1b-f16.json"


def recorded_runs(test: int, slower_from: int | None = None, slowdown: float = 1.0) -> list[Point]:
    """A recorded test's samples (pp512: 0, tg128: 1) as runs of ten repetitions, in recording order;
    from run ``slower_from`` on each repetition takes ``slowdown`` times as long."""
    row = json.loads(H200.read_text())[test]
    tokens = row["n_prompt"] + row["n_gen"]
    ns = row["samples_ns"]
    runs = [ns[i:i + 10] for i in range(0, len(ns) - 9, 10)]
    return [Point.of(f"b{100 + i}", [tokens * 1e9 / (t * (slowdown if slower_from is not None and i >= slower_from
                                                           else 1.0)) for t in run])
            for i, run in enumerate(runs)]


def test_recorded_h200_runs_show_their_own_clock_ramp_and_a_planted_step_at_its_version():
    """The H200's own noise and drift: tg128 varies ~1% between repetitions and drifts ~2% over the
    recording (within the factor: no step); pp512 (~6 ms a repetition) varies ~10% and rose ~9% about
    fifty repetitions in (78.6k -> 85.5k t/s, the GPU's clocks settling): the one step it has."""
    assert detect_steps(recorded_runs(1), 1.05) == []
    (ramp,) = detect_steps(recorded_runs(0), 1.05)
    assert (ramp.before, ramp.after, ramp.regression) == ("b104", "b105", False) and 0.05 < ramp.change < 0.12
    (step,) = detect_steps(recorded_runs(1, 9, 1.08), 1.05)
    assert (step.before, step.after, step.regression) == ("b108", "b109", True)
    # The recording's own -2% drift falls after the planted step too: the size is the planted one's and a bit.
    assert step.ci95[0] < step.change < step.ci95[1] and abs(step.change - (1 / 1.08 - 1)) < 0.03
    steps = detect_steps(recorded_runs(0, 11, 1.25), 1.05)
    assert [(s.after, s.regression) for s in steps] == [("b105", False), ("b111", True)]
    assert abs(steps[-1].change - (1 / 1.25 - 1)) < 0.03


def test_a_planted_slowdown_is_found_at_its_version_with_its_size():
    steps = detect_steps(series([100.0] * 6 + [80.0] * 6), 1.05)
    assert len(steps) == 1
    step = steps[0]
    assert (step.index, step.before, step.after, step.regression) == (6, "v5", "v6", True)
    assert step.ci95[0] < -0.2 < step.ci95[1] or abs(step.change + 0.2) < 0.03
    assert step.ci95[0] < step.change < step.ci95[1] < 0


def test_a_speed_up_is_an_improvement_and_lower_is_better_turns_it_round():
    points = series([50.0] * 5 + [60.0] * 5, seed=3)
    (up,) = detect_steps(points, 1.05)
    assert not up.regression and up.change > 0
    (latency,) = detect_steps(points, 1.05, higher_is_better=False)
    assert latency.regression


def test_noise_alone_has_no_step():
    for seed in range(20):
        assert detect_steps(series([100.0] * 15, seed=seed, run_sd=0.02), 1.05) == []


def test_a_change_below_the_factor_is_no_step_however_significant():
    points = [Point.of(f"v{i}", (100.0 if i < 5 else 97.0,) * 5) for i in range(10)]
    assert detect_steps(points, 1.05) == []
    assert [s.index for s in detect_steps(points, 1.01)] == [5]


def test_too_few_points_are_no_timeline():
    assert detect_steps([Point("a", 1.0), Point("b", 2.0)], 1.05) == []
    assert detect_steps([], 1.05) == []


@settings(max_examples=60, deadline=None)
@given(base=st.floats(1.0, 1e5), n=st.integers(3, 25), seed=st.integers(0, 10**6),
       jitter=st.floats(0.0, 0.01))
def test_property_flat_series_have_no_step(base, n, seed, jitter):
    assert detect_steps(series([base] * n, seed=seed, run_sd=jitter, within=jitter), 1.05) == []


@settings(max_examples=60, deadline=None)
@given(base=st.floats(1.0, 1e5), before=st.integers(2, 12), after=st.integers(2, 12),
       drop=st.floats(0.15, 0.9), seed=st.integers(0, 10**6))
def test_property_a_clear_step_is_found_where_it_was_planted(base, before, after, drop, seed):
    points = series([base] * before + [base * (1 - drop)] * after, seed=seed, run_sd=0.01, within=0.01)
    steps = detect_steps(points, 1.05)
    assert [(s.index, s.regression) for s in steps] == [(before, True)]
    low, high = steps[0].ci95
    assert low <= steps[0].change <= high


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.lists(st.floats(0.001, 1e6), min_size=1, max_size=6), max_size=30),
       factor=st.floats(1.0, 2.0))
def test_property_any_series_gives_steps_that_name_their_neighbours(values, factor):
    points = [Point.of(f"p{i}", v) for i, v in enumerate(values)]
    steps = detect_steps(points, factor)
    indices = [s.index for s in steps]
    assert indices == sorted(set(indices))
    for s in steps:
        assert 0 < s.index < len(points)
        assert (s.before, s.after) == (points[s.index - 1].label, points[s.index].label)
        assert s.regression == (s.level_after < s.level_before)


def test_versions_order_their_numbers_as_numbers():
    assert sorted(["b100", "b99", "b1000", "b101"], key=version_key) == ["b99", "b100", "b101", "b1000"]
    assert sorted(["0.10.0", "0.9.2", "0.9.10"], key=version_key) == ["0.9.2", "0.9.10", "0.10.0"]


@settings(max_examples=100, deadline=None)
@given(prefix=st.text(alphabet="abvrc-", max_size=3), numbers=st.lists(st.integers(0, 10**6), min_size=1, max_size=4),
       other=st.text(max_size=12))
def test_property_version_order_is_numeric_and_total(prefix, numbers, other):
    version = prefix + ".".join(map(str, numbers))
    bumped = prefix + ".".join(map(str, [*numbers[:-1], numbers[-1] + 1]))
    assert version_key(version) < version_key(bumped)
    keys = [version_key(v) for v in (version, bumped, other)]
    assert sorted(keys) == sorted(keys, key=lambda k: k)  # any two keys compare: a total order
