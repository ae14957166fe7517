"""Synthetic Gemma 3 and gpt-oss GGUFs on real llama.cpp (tox -e llamacpp): llama.cpp loads them as
``gemma3`` and ``gpt-oss`` (its sliding-window attention, gpt-oss's sinks and biased experts), its
own llama-quantize makes K-quant and MXFP4 files of them that keep the architecture and the window,
and both llama.cpp paths run prompts and depths past the 64-token window, judged by ceilings whose
KV cache caps the sliding layers at their window."""

import json

import pytest

from pdx.domain import ceilings
from pdx.domain.models import identify
from pdx.domain.synth import get_shape, write_gguf

from conftest import assert_judged_with_the_window, run_pdx

pytestmark = pytest.mark.llamacpp
GEMMA, OSS = get_shape("tiny-gemma3"), get_shape("tiny-gpt-oss")
PAST_WINDOW = 96  # tokens: past the shapes' 64-token window


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("sliding")
    made = {}
    for shape, qtype in ((GEMMA, "q4_k_m"), (OSS, "q4_k_m"), (OSS, "mxfp4")):
        path = root / f"{shape.name}-{qtype}.gguf"
        result = run_pdx("model", "synth", "--shape", shape.name, "--type", qtype, "-o", str(path))
        assert result.returncode == 0, result.stderr
        made[shape.name, qtype] = path
    made[GEMMA.name, "f16"] = write_gguf(GEMMA, "f16", root / "gemma-f16.gguf")
    return made


@pytest.mark.parametrize("shape, qtype, file_type, block", [
    (GEMMA, "q4_k_m", "Q4_K_M", "Q4_K"), (OSS, "q4_k_m", "Q4_K_M", "Q4_K"), (OSS, "mxfp4", "MXFP4_MOE", "MXFP4")])
def test_llama_quantize_keeps_the_architecture_and_its_window(models, shape, qtype, file_type, block):
    info = identify(models[shape.name, qtype])
    assert (info.architecture, info.dtype, info.n_params) == (shape.architecture, file_type, shape.n_params)
    assert block in info.extra["tensor_types"]
    assert (info.extra["sliding_window"], info.extra["sliding_layers"]) == (64, shape.n_sliding_layers)
    if shape.is_moe:
        experts = info.extra["experts"]
        assert experts["expert_params"] == shape.expert_params and experts["active_params"] == shape.active_params


def _bench(registry_url, backend, model) -> dict:
    result = run_pdx("bench", "--json", "--registry", registry_url, "--backend", backend, "-m", str(model),
                     "-p", str(PAST_WINDOW), "-n", "8", "-d", f"0,{PAST_WINDOW}", "-r", "1", "-t", "1")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    return run


@pytest.mark.parametrize("backend", ["llamacpp-bench", "llamacpp-python"])
@pytest.mark.parametrize("shape, qtype", [(GEMMA, "f16"), (OSS, "mxfp4")])
def test_prompts_and_depths_past_the_window_run_in_the_model_s_own_architecture(registry_url, models, backend,
                                                                                  shape, qtype):
    run = _bench(registry_url, backend, models[shape.name, qtype])
    assert run["status"] == "complete" and run["model"]["architecture"] == shape.architecture
    tests = {t["name"]: t for t in run["tests"]}
    assert set(tests) == {f"pp{PAST_WINDOW}", "tg8", f"pp{PAST_WINDOW}@d{PAST_WINDOW}", f"tg8@d{PAST_WINDOW}"}
    assert_judged_with_the_window(run, shape)
    figures = ceilings.model_figures(run["model"])
    deep = tests[f"tg8@d{PAST_WINDOW}"]["ceilings"]["phases"]["decode"]["context"]
    assert deep > 64 and figures.kv.bytes_at(deep) < figures.kv.bytes_per_token() * deep  # the window caps it
