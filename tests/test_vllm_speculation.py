"""Issue 29 on vLLM's CPU build: speculative decoding recorded with the run and what it did read from
the engine's own counters (vllm:spec_decode_num_draft_tokens / _accepted_tokens, scraped from the
server's /metrics around each sample, or LLM.get_metrics() in process). vllm serve with n-gram
lookup (it finds the short cycles a random-weight model's greedy decode falls into), and vllm.LLM
with a draft of the target's own weights (greedy: every draft accepted). Assertions are on counters
and arithmetic, never on timings."""

from __future__ import annotations

import json

import pytest

from pdx.domain.synth import get_shape, write_hf

from conftest import run_pdx

pytestmark = pytest.mark.vllm

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 2}


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    return write_hf(get_shape("tiny"), "float16", tmp_path_factory.mktemp("hf") / "tiny")


def bench(registry_url, *args):
    result = run_pdx("bench", "-p", "16", "-n", "128", "-r", "2", "--registry", registry_url, "--json", *args)
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    return json.loads(run_pdx("show", run["id"], "--registry", registry_url, "--json").stdout)


def _counted(test: dict, drafted: str, accepted: str) -> tuple[int, int]:
    """The engine's own counts, summed straight from the stored samples' figures."""
    samples = test["samples"]
    return sum(round(s["engine"][drafted]) for s in samples), sum(round(s["engine"][accepted]) for s in samples)


def _judged_speculative(test: dict, draft_bytes: int | None) -> None:
    found = test["stats"]["speculation"]
    counted = test["ceilings"]["phases"]["decode"]["speculative"]
    assert counted["target_passes_per_token"] == pytest.approx(found["target_passes"] / found["tokens"])
    assert counted["draft_counted"] == bool(draft_bytes) and counted["draft_bytes"] == draft_bytes
    assert not test["ceilings"]["above_ceiling"] and "warning" not in test["ceilings"]


def test_vllm_serve_with_ngram_lookup_counts_from_its_metrics(registry_url, tiny_hf):
    run = bench(registry_url, "--backend", "vllm-server", "-m", str(tiny_hf), "-o",
                f"speculative_config={json.dumps(NGRAM)}", "--server-args", "--enforce-eager --max-model-len 1024")
    spec = run["engine"]["settings"]["speculation"]
    assert spec["method"] == "ngram" and spec["draft_max"] == 3 and spec["ngram_max"] == 3 and spec["ngram_min"] == 2
    assert "random token ids" in spec["note"] and "--speculative-config" in run["engine"]["details"]["server_command"]
    test = next(t for t in run["tests"] if t["name"] == "tg128")
    assert test["status"] == "ok", test["error"]
    found = test["stats"]["speculation"]
    drafted, accepted = _counted(test, "spec_decode_draft_tokens", "spec_decode_accepted_tokens")
    assert (found["drafted"], found["accepted"]) == (drafted, accepted) and drafted > 0 and accepted > 0
    assert found["tokens"] == 2 * 129  # each request's 129 tokens, as vLLM's generation counter has them
    assert found["tokens_per_pass"] > 1
    _judged_speculative(test, None)  # n-gram lookup drafts without a model
    pp = next(t for t in run["tests"] if t["name"] == "pp16")
    assert "speculation" not in pp["stats"] or pp["stats"]["speculation"]["drafted"] == 0


def test_vllm_llm_with_a_draft_of_its_own_weights_accepts_every_draft(registry_url, tiny_hf):
    config = {"method": "draft_model", "model": str(tiny_hf), "num_speculative_tokens": 3}
    engine_args = {"enforce_eager": True, "max_model_len": 1024, "speculative_config": config}
    run = bench(registry_url, "--backend", "vllm", "-m", str(tiny_hf), "-o", f"engine_args={json.dumps(engine_args)}")
    spec = run["engine"]["settings"]["speculation"]
    assert spec["method"] == "draft_model" and spec["draft_max"] == 3
    assert spec["draft_model"]["sha256"] == run["model"]["sha256"]  # its identity, not its path alone
    test = next(t for t in run["tests"] if t["name"] == "tg128")
    assert test["status"] == "ok", test["error"]
    found = test["stats"]["speculation"]
    drafted, accepted = _counted(test, "spec_decode_draft_tokens", "spec_decode_accepted_tokens")
    assert (found["drafted"], found["accepted"]) == (drafted, accepted)
    assert found["acceptance"] > 0.9 and found["tokens_per_pass"] > 2  # greedy, the same weights
    _judged_speculative(test, spec["draft_model"]["file_bytes"])
    shown = run_pdx("show", run["id"], "--registry", registry_url, env={"COLUMNS": "1000"}).stdout
    assert f"tg128: speculative decoding, {accepted:,} of {drafted:,} drafted tokens accepted" in shown
