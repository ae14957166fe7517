"""Issue 29 on MLX: speculative decoding with a draft model through mlx-lm's own speculative loop
(``speculative_generate_step``), on MLX's Linux CPU backend. The same float32 synthetic target
with (a) a draft of its own weights (greedy: every draft accepted), (b) a draft of other random
weights (almost none accepted), (c) no draft; and the loop's drafts counted against the draft
model's own forward passes. Assertions are on counters and arithmetic, never on timings."""

from __future__ import annotations

import json

import pytest

from pdx.domain.synth import get_shape, write_hf

from conftest import assert_one_line_error, run_pdx

pytestmark = pytest.mark.mlx


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("speculation")
    target = write_hf(get_shape("tiny"), "float32", folder / "target")
    other = write_hf(get_shape("tiny"), "float32", folder / "other", seed=7)
    return str(target), str(other)


def bench(registry_url, target, *options):
    args = [part for option in options for part in ("-o", option)]
    result = run_pdx("bench", "--backend", "mlx", "-m", target, "-p", "16", "-n", "48", "-pg", "16,48", "-r", "2",
                     "--registry", registry_url, "--json", *args)
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    shown = run_pdx("show", run["id"], "--registry", registry_url, "--json")
    return json.loads(shown.stdout)


def _samples_counts(test: dict) -> tuple[int, int, int]:
    """The backend's own counts, summed straight from the stored samples."""
    counts = [s["engine"]["speculation"] for s in test["samples"]]
    return tuple(sum(c[key] for c in counts) for key in ("drafted", "accepted", "tokens"))


def _decoding(run: dict) -> list[dict]:
    return [t for t in run["tests"] if t["n_gen"]]


def test_a_draft_of_the_target_s_own_weights_is_accepted_and_judged_by_a_speculative_ceiling(registry_url, models):
    target, _ = models
    run = bench(registry_url, target, f"draft_model={target}")
    settings = run["engine"]["settings"]
    spec = settings["speculation"]
    assert spec["method"] == "draft-model" and spec["num_draft_tokens"] == 3  # mlx-lm's default
    draft = spec["draft_model"]
    assert draft["sha256"] == run["model"]["sha256"] and draft["path"] == run["model"]["path"]  # its identity
    assert draft["file_bytes"] == run["model"]["file_bytes"] and draft["n_params"] == run["model"]["n_params"]
    assert "draft_model" not in settings and "num_draft_tokens" not in settings  # recorded once, under speculation
    assert [t["name"] for t in _decoding(run)] == ["tg48", "pp16+tg48"]
    for test in _decoding(run):
        assert test["status"] == "ok", test["error"]
        found = test["stats"]["speculation"]
        drafted, accepted, tokens = _samples_counts(test)
        assert (found["drafted"], found["accepted"], found["tokens"]) == (drafted, accepted, tokens)
        assert tokens == 2 * 48 and all(s["engine"]["speculation"]["tokens"] == 48 for s in test["samples"])
        assert drafted > 0 and found["acceptance"] == accepted / drafted > 0.9  # greedy, the same weights
        assert found["tokens_per_pass"] > 2 and found["target_passes"] == tokens - accepted
        ceilings = test["ceilings"]
        decode = ceilings["phases"]["decode"]
        counted = decode["speculative"]
        single, bandwidth = counted["single_token_ceiling"], ceilings["bandwidth"]
        expected = 1 / (found["target_passes_per_token"] / single
                        + found["drafted_per_token"] * draft["file_bytes"] / bandwidth)
        assert decode["ceiling"] == pytest.approx(expected) and counted["draft_counted"]
        assert counted["draft_bytes"] == draft["file_bytes"] and ceilings["speculative"]
        assert not ceilings["above_ceiling"] and not decode.get("above_ceiling") and "warning" not in ceilings
        assert test["engine"]["mlx_lm"]["num_draft_tokens"] == 3  # mlx-lm's own figures speculate too
    pp = next(t for t in run["tests"] if t["name"] == "pp16")
    assert "speculation" not in pp["stats"]
    assert "speculation" not in pp["samples"][0]["engine"]  # prefill drafts nothing
    tg = _decoding(run)[0]
    shown = run_pdx("show", run["id"], "--registry", registry_url, env={"COLUMNS": "300"}).stdout
    accepted, drafted = tg["stats"]["speculation"]["accepted"], tg["stats"]["speculation"]["drafted"]
    assert f"tg48: speculative decoding, {accepted:,} of {drafted:,} drafted tokens accepted" in shown


def test_a_draft_of_other_weights_is_rejected(registry_url, models):
    target, other = models
    run = bench(registry_url, target, f"draft_model={other}", "num_draft_tokens=4")
    spec = run["engine"]["settings"]["speculation"]
    assert spec["num_draft_tokens"] == 4 and spec["draft_model"]["sha256"] != run["model"]["sha256"]
    for test in _decoding(run):
        rejected = test["stats"]["speculation"]
        assert (rejected["drafted"], rejected["accepted"], rejected["tokens"]) == _samples_counts(test)
        assert rejected["drafted"] > 0 and rejected["acceptance"] < 0.2
        assert rejected["tokens_per_pass"] < 1.3
        assert not test["ceilings"]["above_ceiling"]


def test_without_a_draft_nothing_is_recorded_of_speculation(registry_url, models):
    target, _ = models
    run = bench(registry_url, target)
    assert "speculation" not in run["engine"]["settings"]
    assert run["engine"]["settings"]["decode"] == "pipelined (mx.async_eval)"
    for test in run["tests"]:
        assert test["status"] == "ok", test["error"]
        assert "speculation" not in test["stats"] and "speculative" not in test["ceilings"]
        assert all("speculation" not in s["engine"] for s in test["samples"])
        assert "speculative" not in test["ceilings"].get("phases", {}).get("decode", {})


def test_a_draft_with_a_batch_is_refused_in_one_line(registry_url, models):
    target, other = models
    result = run_pdx("bench", "--backend", "mlx", "-m", target, "-p", "16", "-n", "16", "-b", "2",
                     "-o", f"draft_model={other}", "--registry", registry_url)
    assert result.returncode == 2
    assert_one_line_error(result, "-o draft_model", "batch 2", "-b 1")


def test_draft_tokens_without_a_draft_and_an_unreadable_draft_are_refused_in_one_line(registry_url, models, tmp_path):
    target, _ = models
    common = ("bench", "--backend", "mlx", "-m", target, "-p", "16", "-n", "16", "--registry", registry_url)
    alone = run_pdx(*common, "-o", "num_draft_tokens=2")
    assert alone.returncode == 2
    assert_one_line_error(alone, "-o num_draft_tokens", "-o draft_model")
    missing = run_pdx(*common, "-o", f"draft_model={tmp_path / 'none'}")
    assert missing.returncode == 2
    assert_one_line_error(missing, "draft model", "-o draft_model")


class Counted:
    """A model whose forward passes are counted (each drafting pass proposes one token)."""

    def __init__(self, model) -> None:
        self.model, self.calls = model, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.model(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.model, name)


@pytest.mark.parametrize("which, num_draft_tokens", [("target", 4), ("target", 3), ("other", 4), ("other", 1)])
def test_the_drafts_counted_are_the_draft_model_s_own_passes(models, which, num_draft_tokens):
    """A tg test at depth 0 calls the draft only to draft (its cache holds nothing to fill), and the
    target only to verify: the sample's counts against both models' passes. With 4 drafts of the
    target's own weights, 48 tokens end inside the tenth round: 9 rounds of 4 drafts and 1 own
    token, then 3 drafts accepted and no own token."""
    import mlx.core as mx
    from mlx_lm import load

    from pdx.plugins.mlx.measure import Draft, Measure
    from pdx.domain.workload import TestSpec

    target, other = models
    mx.set_default_device(mx.cpu)
    model = Counted(load(target)[0])
    draft = Counted(load(target if which == "target" else other)[0])
    measure = Measure(mx, model, get_shape("tiny").n_vocab, 2048, 42, Draft(draft, num_draft_tokens))
    counts = measure.once(TestSpec(0, 48)).engine["speculation"]
    assert counts["drafted"] == draft.calls and counts["tokens"] == 48
    passes = model.calls  # one verifying pass a round; a round ends at the target's own token, or at the last one
    assert passes in (counts["tokens"] - counts["accepted"], counts["tokens"] - counts["accepted"] + 1)
    if which == "target":
        assert counts["accepted"] == counts["drafted"]
        assert counts == ({"drafted": 39, "accepted": 39, "tokens": 48} if num_draft_tokens == 4
                          else {"drafted": 36, "accepted": 36, "tokens": 48})
        assert passes == (10 if num_draft_tokens == 4 else 12)
    else:
        assert counts["accepted"] < 0.2 * counts["drafted"]
