"""Models known by their names: a serving tool's hub id ("google/gemma-3-27b-it") names a catalog shape and
its width (4bit, AWQ, FP8); llama.cpp's "llama 7B" with Mixtral's 46.7 B parameters is Mixtral 8x7B and
"qwen3next ?B" with 79.67 B is Qwen3-Next 80B-A3B; a vllm bench serve result of a catalog model on a named
GPU gets a decode ceiling at its concurrency, shown by `pdx show`. The printed vLLM result is a real paste
(tests/data/README.md names its source); the GPU is the one a user names with --hardware, or the one the
post's words name (tests/data/real/54)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import pdx_here, pdx_import, show
from pdx.domain.ceilings import hub_names
from pdx.domain.models import words

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("name, shape, bits, dtype", [
    ("google/gemma-3-27b-it", "gemma-3-27b", 16, "bf16"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", 16, "bf16"),
    ("mlx-community/Qwen3-30B-A3B-4bit", "qwen3-30b-a3b", 4, "fp16"),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "qwen2.5-7b", 4, "fp16"),
    ("RedHatAI/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b", 8, "fp8"),
    ("openai/gpt-oss-120b", "gpt-oss-120b", 4, "fp4"),  # published in MXFP4
    ("llama 8B Q4_K - Medium", "llama-3.1-8b", 4, "int8"),
])
def test_a_hub_name_says_its_shape_and_width(name, shape, bits, dtype):
    found = hub_names.read(name)
    assert (found.shape.name, found.bits, found.dtype) == (shape, bits, dtype)


def test_a_moe_by_its_architecture_and_count():
    qwen3next = words.parse("qwen3next ?B Q4_K - Medium", 79.67e9)
    assert qwen3next.moe and qwen3next.active_params == 3e9 and "Qwen3-Next-80B-A3B" in qwen3next.basis
    assert words.parse("qwen3next ?B Q4_K - Medium", 30e9).active_params is None  # no such Qwen3-Next


def test_a_model_type_printed_without_a_size_is_read_by_its_architecture_and_count():
    """llama.cpp prints no size for a type it cannot name (tests/data/real/49: DeepSeek-V4-Flash on an M4 Max, read
    as dense it sat at 1061% of its prefill ceiling): the architecture and the count say which model it is."""
    flash = words.parse("deepseek4 IQ2_XXS - 2.0625 bpw", 284.33e9)
    assert (flash.size, flash.weight_type, flash.moe, flash.active_params) == ("", "iq2_xxs", True, 13e9)
    assert words.parse("gemma3n E2B Q4_0", 4.46e9).size == "E2B"  # a size label that is no file type stays one


def test_a_type_llama_cpp_only_guessed_is_read_from_the_file_s_width(registry_url):
    """geerlingguy's Pi 5 run (tests/data/real/50): "qwen3moe 30B.A3B all F32 (guessed)" is a 2.70-bit Q3_K_S
    file, so its prefill is bounded by the Cortex-A76's int8 rate, not its fp32 one (which put it at 40%)."""
    (run_id,) = pdx_import(registry_url, DATA / "real" / "50_pi5_16gb_cpu_qwen3moe_30b_a3b_byteshape.md")["added"]
    run = show(registry_url, run_id)
    assert run["hardware"]["catalog"] == "raspberry-pi-5" and run["ceiling_basis"]["compute_dtype"] == "int8"
    assert any("2.70 bits per weight" in note for note in run["ceiling_basis"]["left_out"])
    assert words.parse("llama 7B mostly Q4_0").weight_type == "q4_0"  # the old builds' "mostly"


def test_mixtral_as_llama_cpp_labels_it_is_judged_as_mixtral(tmp_path, registry_url):
    post = tmp_path / "post.md"
    post.write_text("RTX 4090\n\n| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | "
                    "--: | --- | ---: |\n"
                    "| llama 7B Q4_0 | 24.62 GiB | 46.70 B | CUDA | 99 | tg128 | 50.00 ± 0.10 |\n")
    (run_id,) = pdx_import(registry_url, post)["added"]
    model = show(registry_url, run_id)["model"]
    assert model["extra"]["catalog_shape"]["name"] == "mixtral-8x7b" and model["extra"]["experts"]["used"] == 2


def test_a_vllm_serve_result_gets_a_decode_ceiling_at_its_concurrency(registry_url):
    (run_id,) = pdx_import(registry_url, DATA / "vllm_bench_serve_printed_pr33743_gemma.txt", "--hardware",
                           "H100")["added"]
    run = show(registry_url, run_id)
    ceiling = run["tests"][0]["ceilings"]
    assert run["model"]["extra"]["sized_by_name"]["shape"] == "gemma-3-27b"
    assert ceiling["concurrency"] == 16 and ceiling["bound"] == "memory"  # 16 requests at once, no cap
    assert ceiling["fraction"] == pytest.approx(268.31 / ceiling["ceiling"]) and 0 < ceiling["fraction"] < 1
    told = " ".join(pdx_here("show", run_id, "--registry", registry_url).split())
    assert f"decode ceiling at concurrency 16: {ceiling['ceiling']:.4g} tok/s mem" in told
    assert f"output token throughput {ceiling['fraction']:.0%} of it" in told


def test_a_vllm_serve_sweep_of_a_catalog_model_on_a_named_gpu_gets_a_ceiling_per_concurrency(registry_url):
    """tests/data/real/57, a real README: "tested on a system equipped with NVIDIA A100 80GB GPU", then
    benchmark_serving.py runs of Qwen2-7B-Instruct (the catalog's Qwen2.5 7B dims) sending 1, 10, 20, 30 and
    50 prompts at once. Imported without --hardware, each concurrency gets its decode ceiling and fraction,
    as `pdx show` prints them."""
    real = DATA / "real" / "57_a100_80gb_vllm_benchmark_serving_qwen2_7b_concurrency_1_to_50.txt"
    runs = [show(registry_url, r) for r in pdx_import(registry_url, real)["added"]]
    output = {1: 84.95, 10: 715.92, 20: 1387.31, 30: 1967.90, 50: 2356.12}  # the blocks' output tok/s
    assert {r["hardware"]["catalog"] for r in runs} == {"nvidia-a100-80gb-sxm"}
    assert {r["model"]["extra"]["sized_by_name"]["shape"] for r in runs} == {"qwen2.5-7b"}
    ceilings = {t["ceilings"]["concurrency"]: t["ceilings"] for r in runs for t in r["tests"]}
    assert sorted(ceilings) == sorted(output)
    for n, ceiling in ceilings.items():
        assert ceiling["bound"] == "memory" and 0 < ceiling["fraction"] < 1
        assert ceiling["fraction"] == pytest.approx(output[n] / ceiling["ceiling"])
    assert ceilings[50]["ceiling"] > ceilings[1]["ceiling"] * 30  # the weights read once per step for all 50
    told = " ".join(pdx_here("show", runs[0]["id"], "--registry", registry_url).split())
    assert f"decode ceiling at concurrency 1: {ceilings[1]['ceiling']:.4g} tok/s mem" in told


def test_a_vllm_serve_result_on_the_gpu_its_post_names_needs_no_hardware_option(registry_url):
    """The real PR of tests/data/real/54 says "on 2xH100 (tp2)" above its printed result: the GPU is read
    from those words (no --hardware), the model (Qwen3-Next 80B-A3B FP8) from its hub id, and the one
    concurrency (64) gets a decode ceiling and its fraction, shown by `pdx show`."""
    real = DATA / "real" / "54_h100x2_tp2_vllm_bench_serve_qwen3_next_80b_fp8_c64.txt"
    (run_id,) = pdx_import(registry_url, real)["added"]
    run = show(registry_url, run_id)
    assert run["hardware"]["catalog"] == "nvidia-h100-sxm"
    assert run["provenance"]["chip"] == "2 x NVIDIA H100 SXM, named in the text around the result"
    assert run["ceiling_basis"]["devices"] == 2 and run["ceiling_basis"]["device_from"] == "the imported file"
    assert run["model"]["extra"]["named_experts"]["words"] == "? 80B.A3B"  # 3B of 80B read per token
    assert run["model"]["dtype"] == "fp8" and run["ceiling_basis"]["flops_dtype"] == "fp8"  # "-FP8": Hopper's fp8
    (test,) = run["tests"]
    ceiling = test["ceilings"]
    assert ceiling["concurrency"] == 64 and ceiling["bound"] == "memory"
    assert ceiling["fraction"] == pytest.approx(2886.49 / ceiling["ceiling"]) and 0 < ceiling["fraction"] < 1
    told = " ".join(pdx_here("show", run_id, "--registry", registry_url).split())
    assert f"decode ceiling at concurrency 64: {ceiling['ceiling']:,.0f} tok/s mem" in told


def test_tensor_parallelism_the_text_names_counts_its_gpus(registry_url):
    """"TP2" above the block: two GPUs, their bandwidths side by side (tensor parallel)."""
    (first, *_) = pdx_import(registry_url, DATA / "vllm_bench_serve_printed_pr31826_tp2.txt", "--hardware",
                             "H100")["added"]
    run = show(registry_url, first)
    assert run["provenance"]["tensor_parallel"] == {"size": 2, "read_from": "the text: 'TP2'"}


def test_the_model_is_shown_as_its_tool_wrote_it_and_its_id_stays(tmp_path, registry_url):
    """"qwen3next 80B.A3B Q4_K - Medium" keeps its shape words and quant in `pdx show` (it read "qwen3next
    79.67B Medium"); the label is a display, so importing the same table again finds the same run."""
    post = tmp_path / "post.md"
    post.write_text("| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | --: | --- | "
                    "---: |\n"
                    "| qwen3next 80B.A3B Q4_K - Medium | 45.08 GiB | 79.67 B | CUDA | 99 | tg128 | 50.00 ± 0.10 |\n")
    (run_id,) = pdx_import(registry_url, post)["added"]
    assert "qwen3next 80B.A3B Q4_K - Medium" in pdx_here("show", run_id, "--registry", registry_url)
    again = pdx_import(registry_url, post)
    assert again["added"] == [] and run_id in str(again)


def test_the_run_page_carries_the_serving_decode_ceiling(registry_url, tmp_path):
    (run_id,) = pdx_import(registry_url, DATA / "vllm_bench_serve_printed_pr33743_gemma.txt", "--hardware",
                           "H100")["added"]
    pdx_here("publish", str(tmp_path / "site"), "--registry", registry_url)
    page = (tmp_path / "site" / "runs" / f"{run_id}.html").read_text()
    assert "decode ceiling at concurrency 16" in page and "output token throughput" in page
