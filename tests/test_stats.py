import math

import pytest

from pdx.reports.results import derive_stats as derive
from pdx.domain.stats import rates, summarize, t95


def test_summary_matches_hand_computation():
    s = summarize([10.0, 12.0, 14.0])
    assert s.mean == 12.0
    assert s.median == 12.0
    assert s.stddev == pytest.approx(2.0)
    assert s.ci95 == pytest.approx(4.303 * 2.0 / math.sqrt(3))
    assert (s.min, s.max, s.n) == (10.0, 14.0, 3)
    assert s.cv == pytest.approx(2 / 12)


def test_single_sample_has_no_interval():
    s = summarize([5.0])
    assert s.stddev == 0.0 and math.isnan(s.ci95)
    assert s.to_dict()["ci95"] is None


def test_t_values():
    assert t95(1) == 12.706 and t95(30) == 2.042 and t95(200) == 1.96


def test_rates_are_per_sample_tokens_per_second():
    assert rates(512, [512_000_000, 256_000_000]) == [1000.0, 2000.0]


def test_pg_tests_get_a_phase_split_and_batches_a_per_sequence_rate():
    test = {
        "kind": "pg", "n_prompt": 100, "n_gen": 10, "batch": 2,
        "samples": [{"ns": 2_000_000_000, "prompt_ns": 1_000_000_000, "gen_ns": 1_000_000_000}] * 2,
    }
    stats = derive(test)
    assert stats["rate"]["mean"] == pytest.approx(110.0)
    assert stats["per_sequence_rate"] == pytest.approx(55.0)
    assert stats["prompt_rate"]["mean"] == pytest.approx(200.0)
    assert stats["gen_rate"]["mean"] == pytest.approx(20.0)
