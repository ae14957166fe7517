"""Synthetic Gemma 3 and gpt-oss in HF layout on real mlx-lm (tox -e mlx: MLX's Linux CPU backend):
mlx-lm loads them as gemma3_text and gpt_oss (its rotating caches for the sliding layers), prompts
and depths past the 64-token window run, and ceilings cap the sliding layers' KV at the window.

mlx-lm reads gpt-oss's fused experts only as MXFP4 blocks, so its gpt-oss is written in mlx-lm's own
quantised layout (mlx-q8; emulated on this CPU, so kept to one short test); the transformers layout
vLLM loads is refused in one line."""

import json

import pytest

from pdx.domain.synth import get_shape, write_hf

from conftest import assert_judged_with_the_window, assert_one_line_error, run_pdx

pytestmark = pytest.mark.mlx
GEMMA, OSS = get_shape("tiny-gemma3"), get_shape("tiny-gpt-oss")
PAST_WINDOW = 96  # tokens: past the shapes' 64-token window


def _bench(registry_url, model, *args) -> dict:
    result = run_pdx("bench", "--json", "--registry", registry_url, "--backend", "mlx", "-m", str(model),
                     "-p", str(PAST_WINDOW), "-r", "1", *args)
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    assert run["status"] == "complete", run["error"]
    return run


def test_gemma3_past_its_window(registry_url, tmp_path):
    model = write_hf(GEMMA, "float32", tmp_path / "gemma")
    run = _bench(registry_url, model, "-n", "8", "-d", f"0,{PAST_WINDOW}")
    assert run["model"]["architecture"] == "gemma3_text"
    assert {t["name"] for t in run["tests"]} == {f"pp{PAST_WINDOW}", "tg8", f"pp{PAST_WINDOW}@d{PAST_WINDOW}",
                                                 f"tg8@d{PAST_WINDOW}"}
    assert_judged_with_the_window(run, GEMMA)


def test_gpt_oss_in_mlx_lm_s_layout_past_its_window(registry_url, tmp_path):
    model = write_hf(OSS, "mlx-q8", tmp_path / "oss")
    run = _bench(registry_url, model, "-n", "4")
    assert run["model"]["architecture"] == "gpt_oss" and run["model"]["dtype"] == "q8"
    assert {t["name"] for t in run["tests"]} == {f"pp{PAST_WINDOW}", "tg4"}
    assert_judged_with_the_window(run, OSS)


def test_gpt_oss_in_transformers_layout_is_refused_in_one_line(registry_url, tmp_path):
    model = write_hf(OSS, "float32", tmp_path / "oss-transformers")
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "--backend", "mlx", "-m", str(model)),
                          "mlx-lm cannot load", "gate_up_proj", "MXFP4 blocks", "--type mlx-q8")
