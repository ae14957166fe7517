"""Speculative decoding's arithmetic and llama-server's flags, without an engine (issue 29; the real
server: tests/test_llamacpp_speculation.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdx.domain import ceilings
from pdx.reports import figures
from pdx.domain.ceilings.roofline import HardwareFigures
from pdx.contract.errors import PdxError
from pdx.plugins.llamacpp import speculation
from pdx.domain.speculation import NGRAM_NOTE, speculation_stats


def _request(drafted, accepted, predicted, role="tg", status="ok"):
    return {"role": role, "status": status, "n_gen": predicted,
            "engine": {"timings": {"predicted_n": predicted, "draft_n": drafted, "draft_n_accepted": accepted}}}


def test_the_counters_of_every_measured_request_are_summed_and_warm_ups_left_out():
    test = {"kind": "tg", "requests": [_request(40, 30, 50), _request(20, 10, 50), _request(99, 99, 100, "warmup"),
                                       _request(9, 9, 9, status="error")]}
    found = speculation_stats(test)
    # 60 drafted, 40 accepted, 100 output tokens: 60 target passes, each yielding its accepted drafts and one own
    assert found == {"drafted": 60, "accepted": 40, "tokens": 100, "acceptance": 40 / 60, "target_passes": 60,
                     "tokens_per_pass": 100 / 60, "target_passes_per_token": 0.6, "drafted_per_token": 0.6}


def test_a_test_before_it_is_stored_reads_its_samples_requests_and_no_counter_means_none():
    test = {"kind": "tg", "samples": [{"requests": [_request(8, 8, 10)]}, {"requests": [_request(8, 4, 10)]}]}
    assert speculation_stats(test)["accepted"] == 12
    plain = {"kind": "tg", "requests": [{"role": "tg", "engine": {"timings": {"predicted_n": 10}}}]}
    assert speculation_stats(plain) is None
    assert speculation_stats({"kind": "tg", "requests": [_request(-1, 0, 10)]}) is None  # not a count


def test_the_speculative_ceiling_counts_target_passes_and_the_draft_s_reads():
    # 100 GB/s; the single-token ceiling 50 t/s (a 2 GB target). Per output token: 0.4 target passes
    # (0.4 / 50 = 8 ms) and 1.2 drafted tokens of a 100 MB draft (1.2 * 1 ms = 1.2 ms): 9.2 ms, 108.7 t/s.
    decode = {"ceiling": 50.0, "bound": "memory"}
    spec = {"target_passes_per_token": 0.4, "drafted_per_token": 1.2}
    found = ceilings.speculative(decode, spec, 100e9, 100_000_000)
    assert found["ceiling"] == pytest.approx(1 / 0.0092)
    assert found["speculative"]["single_token_ceiling"] == 50.0 and found["speculative"]["draft_counted"]
    assert ceilings.speculative(decode, spec, 100e9, None)["ceiling"] == pytest.approx(125.0)  # n-gram: no draft


def test_a_rate_above_the_speculative_ceiling_is_still_flagged_and_says_so():
    hw = HardwareFigures(bandwidth=1e9, flops=1e12, flops_dtype="fp16", source="given", ref="test", label="given")
    model = ceilings.model_figures({"n_params": 1_000_000, "file_bytes": 2_000_000, "dtype": "F16"})
    test = {"n_prompt": 0, "n_gen": 100, "depth": 0, "batch": 1}
    spec = {"speculation": {"target_passes_per_token": 0.5, "drafted_per_token": 0.0}}
    single = ceilings.test_ceilings(test, {"rate": {"mean": 1.0}}, model, hw)["ceiling"]
    within = ceilings.test_ceilings(test, spec | {"rate": {"mean": 1.5 * single}}, model, hw)
    assert within["ceiling"] == pytest.approx(2 * single) and not within["above_ceiling"] and within["speculative"]
    beyond = ceilings.test_ceilings(test, spec | {"rate": {"mean": 3 * single}}, model, hw)
    assert beyond["above_ceiling"] and "speculative memory-bound ceiling" in beyond["warning"]


def test_the_note_says_what_was_drafted_accepted_and_counted():
    test = {"name": "tg64", "kind": "tg", "stats": {"speculation": speculation_stats(
        {"kind": "tg", "requests": [_request(100, 75, 100)]})},
        "ceilings": {"phases": {"decode": ceilings.speculative({"ceiling": 40.0}, {
            "target_passes_per_token": 0.25, "drafted_per_token": 1.0}, None, None)}}}
    (note,) = [n for n in figures.DECODE.notes(test) if n.topic == "speculation"]
    assert note.text == ("tg64: speculative decoding, 75 of 100 drafted tokens accepted (75%), 4.00 tokens per "
                         "pass of the target model; its ceiling counts 0.25 target passes (the draft's own reads "
                         "not counted) per output token, where one token a pass allows 40.0 t/s")
    assert figures.unshown(test) == []


@pytest.mark.parametrize("options, flags", [
    ({"draft_model": "d.gguf"}, ["--spec-draft-model", "d.gguf", "--spec-type", "draft-simple"]),
    ({"draft_model": "d.gguf", "spec_type": "draft-eagle3", "draft_max": "8"},
     ["--spec-draft-model", "d.gguf", "--spec-type", "draft-eagle3", "--spec-draft-n-max", "8"]),
    ({"spec_type": "ngram-mod"}, ["--spec-type", "ngram-mod"]),
    ({}, []),
])
def test_options_become_llama_server_flags(options, flags):
    assert speculation.flags(options) == flags


def test_the_command_line_says_what_the_run_records():
    assert speculation.read(["llama-server", "-m", "t.gguf", "-t", "2"]) is None
    assert speculation.read(["llama-server", "--spec-type", "none", "-md", "d.gguf"]) is None
    assert speculation.read(["x", "-md", "d.gguf", "--spec-type=draft-simple", "--spec-draft-n-max", "6"]) == {
        "draft_model": "d.gguf", "method": "draft-simple", "draft_max": 6}
    unset = speculation.read(["x", "--model-draft", "d.gguf"])  # loaded, and no method: the server's default
    assert unset["method"] is None and "no --spec-type" in unset["note"]
    assert speculation.read(["x", "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3"]) == {
        "method": "ngram-simple", "ngram_size_n": 3, "note": speculation.NGRAM_NOTE}
    with pytest.raises(PdxError, match="--spec-draft-n-max 'many' is not a whole number"):
        speculation.read(["x", "--spec-type", "draft-simple", "--spec-draft-n-max", "many"])


def test_a_sample_s_own_counts_stand_for_its_requests():
    """In process, a backend counts per sample (Sample.engine["speculation"]); those are read first."""
    test = {"kind": "tg", "samples": [{"engine": {"speculation": {"drafted": 12, "accepted": 9, "tokens": 16}},
                                       "requests": [_request(99, 99, 99)]},
                                      {"engine": {"speculation": {"drafted": 12, "accepted": 3, "tokens": 16}}}]}
    found = speculation_stats(test)
    assert (found["drafted"], found["accepted"], found["tokens"], found["target_passes"]) == (24, 12, 32, 20)


def test_a_comparison_sets_speculation_side_by_side():
    from pdx.reports.comparison import differences

    def run(speculation, counts):
        stats = {"rate": {"mean": 1.0}} | ({"speculation": counts} if counts else {})
        return {"hardware": {"name": "h"}, "model": {"name": "m", "sha256": "0" * 64}, "backend": "llamacpp-server",
                "engine": {"name": "llama.cpp", "settings": {"speculation": speculation} if speculation else {}},
                "threads": 2, "options": {}, "pdx_version": "0.1.0",
                "tests": [{"name": "pp16", "stats": {}}, {"name": "tg64", "stats": stats}]}

    counts = speculation_stats({"kind": "tg", "requests": [_request(100, 75, 100)]})
    plain = run(None, None)
    drafted = run({"method": "draft-simple", "draft_model": {"name": "tiny"}, "draft_max": 4}, counts)
    assert differences(plain, drafted) == [
        ("speculative decoding", "none", "draft-simple, draft tiny, up to 4 drafted"),
        ("tg64: drafts accepted", "—", "75 of 100 (75%), 4.00 tokens a pass")]
    assert differences(plain, plain) == []


def test_a_vllm_serve_command_line_says_what_the_run_records():
    from pdx.plugins.vllm import speculation as vllm_speculation

    assert vllm_speculation.read(["vllm", "serve", "m", "--port", "8000"]) is None
    ngram = '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 5}'
    assert vllm_speculation.read(["vllm", "serve", "m", "--speculative-config", ngram]) == {
        "method": "ngram", "draft_max": 4, "ngram_max": 5, "note": NGRAM_NOTE}
    inline = '--speculative_config={"model": "d", "num_speculative_tokens": 2}'
    drafted = vllm_speculation.read(["vllm", "serve", "m", inline])
    assert drafted == {"method": "draft_model", "draft_model": "d", "draft_max": 2}
    assert vllm_speculation.flags({"speculative_config": ngram}) == ["--speculative-config", ngram]
    with pytest.raises(PdxError, match="-o speculative_config: not JSON"):
        vllm_speculation.flags({"speculative_config": "{method: ngram"})
    with pytest.raises(PdxError, match="give a JSON object, not list"):
        vllm_speculation.read(["vllm", "serve", "m", "--speculative-config", "[1]"])


def test_vllm_s_counters_become_a_sample_s_counts_only_where_it_speculates():
    from pdx.plugins.vllm.speculation import counts

    figures = {"spec_decode_draft_tokens": 110.0, "spec_decode_accepted_tokens": 60.0, "generation_tokens": 129.0}
    assert counts(figures, True) == {"drafted": 110, "accepted": 60, "tokens": 129}
    assert counts(figures, False) == {"drafted": 110, "accepted": 60, "tokens": 129}  # a --url server that drafts
    idle = {"spec_decode_draft_tokens": 0.0, "generation_tokens": 129.0}
    assert counts(idle, False) is None and counts({"generation_tokens": 129.0}, True) is None
    assert counts(idle, True) == {"drafted": 0, "accepted": 0, "tokens": 129}  # speculating, nothing drafted


def test_llama_server_timings_without_draft_counts_are_nothing_drafted():
    """llama-server's server_slot_stats::to_json writes draft_n and draft_n_accepted only once a slot drafted:
    a speculating server's request whose timings lack them drafted nothing (0), where one with none drafted."""
    timings = [{"predicted_n": 9}, {"predicted_n": 9, "draft_n": 4, "draft_n_accepted": 3}, {"predicted_n": 5}]
    assert speculation.counts(timings) == {"drafted": 4, "accepted": 3, "tokens": 23}
    assert speculation.counts([{"predicted_n": 9}]) == {"drafted": 0, "accepted": 0, "tokens": 9}
    assert speculation.counts([]) is None and speculation.counts([{"draft_n": "x", "predicted_n": 1}]) is None


@given(st.lists(st.fixed_dictionaries({"predicted_n": st.integers(0, 10**6)},
                                      optional={"draft_n": st.integers(0, 10**6),
                                                "draft_n_accepted": st.integers(0, 10**6)}), max_size=20))
def test_draft_counts_are_the_sums_with_absent_as_zero(timings):
    found = speculation.counts(timings)
    if not timings:
        assert found is None
        return
    drafted = sum(t.get("draft_n", 0) for t in timings)
    assert found == {"drafted": drafted, "accepted": min(sum(t.get("draft_n_accepted", 0) for t in timings), drafted),
                     "tokens": sum(t["predicted_n"] for t in timings)}


def _speculating_run(tmp_path, counted: dict | None) -> str:
    """A generated run with ngram-simple speculation recorded, its decode test's counts ``counted`` (None: the
    engine gave none); the terminal text `pdx show` prints for it."""
    import random

    from rich.console import Console

    from pdx.reports.display import print_run
    from pdx.registry import Registry
    from pdx.reports.results import read_run
    from pdx.domain.workload import TestSpec
    from runfactory import START, add_run, hardware, model

    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    run = read_run(Registry(url), add_run(Registry(url), hardware("Apple M2 Max", 0), model("m", 1), "llamacpp-server",
                                          START, random.Random(1), tests=[TestSpec(16, 0), TestSpec(0, 8)]))
    run["engine"]["settings"]["speculation"] = speculation.read(["llama-server", "--spec-type", "ngram-simple"])
    if counted:
        run["tests"][1]["stats"]["speculation"] = speculation_stats({"samples": [{"engine": {"speculation": counted}}]})
    console = Console(record=True, width=120, color_system=None)
    print_run(run, "sqlite:///r", console)
    return " ".join(console.export_text().split())


def test_a_speculating_test_that_drafted_nothing_says_so(tmp_path):
    shown = _speculating_run(tmp_path, {"drafted": 0, "accepted": 0, "tokens": 18})
    assert "tg8: speculative decoding on, but nothing drafted in 18 output tokens: each took a pass of the target " \
           "model" in shown
    assert "no draft counts" not in shown


def test_a_speculating_engine_that_gave_no_counts_says_so(tmp_path):
    shown = _speculating_run(tmp_path, None)
    assert ("speculative decoding (ngram-simple) on, but the engine gave no draft counts for tg8: what it drafted "
            "and accepted there is unknown") in shown
