"""Issue 29 on a real llama-server: speculative decoding recorded with the run, what it did read from
the server's own per-request counters, and a decode ceiling that counts it. The same synthetic target
with (a) a draft of its own weights (greedy: every draft accepted), (b) a draft of other random
weights (almost none accepted), (c) llama-server's synthetic acceptance (--spec-synth-len: a set mean
length, between the two) and n-gram lookup (ngram-simple over the generated text, which a random-weight
model's greedy decode fills with short cycles), and (d) no speculation. Assertions are on counters and arithmetic, never
on timings: how much faster (a) decodes than (d) is printed by tests/benchmarks/speculation.py."""

from __future__ import annotations

import json

import pytest

from pdx.domain.synth import get_shape, write_gguf

from conftest import run_pdx

pytestmark = pytest.mark.llamacpp


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("speculation")
    target = write_gguf(get_shape("tiny"), "f16", folder / "target.gguf")
    other = write_gguf(get_shape("tiny"), "f16", folder / "other.gguf", seed=7)
    return str(target), str(other)


def bench(registry_url, target, *options, n_gen=48):
    args = [part for option in options for part in ("-o", option)]
    # one server thread leaves the client a core of CI's two: a client starved of CPU reads a short test's
    # tokens in one burst, which pdx rightly refuses to time (the run then ends partial)
    result = run_pdx("bench", "--backend", "llamacpp-server", "-m", target, "-p", "16", "-n", str(n_gen), "-r", "2",
                     "-t", "1", "--registry", registry_url, "--json", *args)
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    shown = run_pdx("show", run["id"], "--registry", registry_url, "--json")
    return json.loads(shown.stdout)


def _server_counters(test: dict) -> tuple[int, int, int]:
    """The server's own figures, summed straight from the stored requests' timings."""
    timings = [r["engine"]["timings"] for r in test["requests"] if r["role"] != "warmup"]
    return (sum(t.get("draft_n", 0) for t in timings), sum(t.get("draft_n_accepted", 0) for t in timings),
            sum(t["predicted_n"] for t in timings))


def _decode(run: dict, name: str = "tg48") -> dict:
    return next(t for t in run["tests"] if t["name"] == name)


def test_a_draft_of_the_target_s_own_weights_is_accepted_and_judged_by_a_speculative_ceiling(registry_url, models):
    target, _ = models
    run = bench(registry_url, target, f"draft_model={target}", "draft_max=4")
    spec = run["engine"]["settings"]["speculation"]
    assert spec["method"] == "draft-simple" and spec["draft_max"] == 4
    assert spec["draft_model"]["sha256"] == run["model"]["sha256"]  # its identity, not its path alone
    test = _decode(run)
    assert test["status"] == "ok", test["error"]
    found = test["stats"]["speculation"]
    drafted, accepted, tokens = _server_counters(test)
    assert (found["drafted"], found["accepted"], found["tokens"]) == (drafted, accepted, tokens)
    assert drafted > 0 and found["acceptance"] == accepted / drafted > 0.9  # greedy, the same weights
    assert found["tokens_per_pass"] > 2 and found["target_passes"] == tokens - accepted
    ceilings = test["ceilings"]
    counted = ceilings["phases"]["decode"]["speculative"]
    single, bandwidth = counted["single_token_ceiling"], ceilings["bandwidth"]
    expected = 1 / (found["target_passes_per_token"] / single
                    + found["drafted_per_token"] * spec["draft_model"]["file_bytes"] / bandwidth)
    assert ceilings["ceiling"] == pytest.approx(expected) and counted["draft_counted"]
    assert not ceilings["above_ceiling"] and "warning" not in ceilings
    pp = next(t for t in run["tests"] if t["name"] == "pp16")
    assert "speculation" not in pp["stats"]  # prefill drafts nothing
    shown = run_pdx("show", run["id"], "--registry", registry_url, env={"COLUMNS": "1000"}).stdout
    assert f"tg48: speculative decoding, {accepted:,} of {drafted:,} drafted tokens accepted" in shown
    itl = test["stats"]["serving"]["itl_ms"]  # several tokens a pass: most gaps short, each pass's one long
    assert f"tokens arrive in bursts: ITL p50 {itl['p50']:.2f} ms, p99 {itl['p99']:.2f} ms" in shown
    assert itl["p50"] < itl["p99"]


def test_a_draft_of_other_weights_is_rejected_and_synthetic_acceptance_lies_between(registry_url, models):
    target, other = models
    rejected = _decode(bench(registry_url, target, f"draft_model={other}", "draft_max=4"))["stats"]["speculation"]
    assert rejected["drafted"] > 0 and rejected["acceptance"] < 0.2
    assert rejected["tokens_per_pass"] < 1.3
    run = bench(registry_url, target, f"draft_model={other}", "draft_max=4", "spec_synth_len=2.5")
    assert run["engine"]["settings"]["speculation"]["synthetic_accept_length"] == 2.5
    assert "--spec-synth-len" in run["engine"]["settings"]["speculation"]["note"]
    between = _decode(run)["stats"]["speculation"]
    assert rejected["acceptance"] < between["acceptance"] < 0.95
    assert between["accepted"] == _server_counters(_decode(run))[1]


def test_ngram_lookup_drafts_from_the_repetitive_text_it_generates(registry_url, models):
    target, _ = models
    # 128 tokens: in 48 the cycles are too few for a 3-gram to find them again
    run = bench(registry_url, target, "spec_type=ngram-simple", "server_args=--spec-ngram-simple-size-n 3", n_gen=128)
    spec = run["engine"]["settings"]["speculation"]
    assert spec["method"] == "ngram-simple" and spec["ngram_size_n"] == 3 and "draft_model" not in spec
    assert "random token ids" in spec["note"]  # the run says where the repetition it found came from
    test = _decode(run, "tg128")
    assert test["status"] == "ok", test["error"]
    found = test["stats"]["speculation"]
    assert (found["drafted"], found["accepted"], found["tokens"]) == _server_counters(test)
    assert found["accepted"] > 0 and found["tokens_per_pass"] > 1
    counted = test["ceilings"]["phases"]["decode"]["speculative"]
    assert not counted["draft_counted"]  # no draft model: drafting reads no weights
    assert not test["ceilings"]["above_ceiling"] and "warning" not in test["ceilings"]


def test_without_speculation_nothing_is_recorded_of_it(registry_url, models):
    target, _ = models
    run = bench(registry_url, target)
    assert "speculation" not in run["engine"]["settings"]
    test = _decode(run)
    assert "speculation" not in test["stats"] and "speculative" not in test["ceilings"]


def test_ngram_lookup_that_finds_nothing_counts_nothing_drafted_and_says_so(registry_url, models):
    """Eight tokens give a 3-gram nothing to find again: llama-server then names no draft_n in its timings,
    and the run records 0 drafted (not nothing at all) and `pdx show` says so beside the test."""
    target, _ = models
    run = bench(registry_url, target, "spec_type=ngram-simple", "server_args=--spec-ngram-simple-size-n 3", n_gen=8)
    test = _decode(run, "tg8")
    drafted, accepted, tokens = _server_counters(test)
    found = test["stats"]["speculation"]
    assert (found["drafted"], found["accepted"], found["tokens"]) == (drafted, accepted, tokens)
    shown = " ".join(run_pdx("show", run["id"], "--registry", registry_url, env={"COLUMNS": "120"}).stdout.split())
    if drafted == 0:
        assert f"tg8: speculative decoding on, but nothing drafted in {tokens:,} output tokens" in shown
    else:  # the model's greedy cycle came early: the counts are said as any speculating test's
        assert f"tg8: speculative decoding, {accepted:,} of {drafted:,} drafted tokens accepted" in shown
    assert "no draft counts" not in shown
