"""``pdx ceiling`` and ``pdx kv``: the seeds' arithmetic comes out of the
real command line, and bad input is one line each."""

import json

import numpy as np
import pytest

from conftest import assert_one_line_error, run_pdx

NAPKIN = ("--model-bytes", "3.83GB", "--params", "7B")


def pdx_ok(*args) -> str:
    result = run_pdx(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_llama2_7b_q4_0_decode_ceilings_and_the_measured_fraction():
    out = pdx_ok("ceiling", "--bandwidth", "400GB/s", *NAPKIN, "--measured", "61.19")
    assert "104.4 t/s ceiling, the memory bound" in out and "compute bound unknown" in out
    assert "61.19 t/s decode = 59% of its ceiling" in out
    assert "208.9 t/s ceiling" in pdx_ok("ceiling", "--bandwidth", "800GB/s", *NAPKIN)
    named = pdx_ok("ceiling", "--bandwidth", "400GB/s", "--flops", "27TFLOPS", *NAPKIN)
    assert "104.4 t/s ceiling, memory-bound (memory 104.4, compute 1,929 t/s)" in named


def test_h100_sxm_ridge_point():
    report = json.loads(pdx_ok("ceiling", "--hardware", "H100 SXM", *NAPKIN, "--dtype", "fp16", "--json"))
    assert report["hardware"]["bandwidth"] == 3.35e12 and report["hardware"]["flops"] == 989.5e12
    assert report["ridge_point"] == pytest.approx(295, abs=1)
    assert "295 FLOP/byte" in pdx_ok("ceiling", "--hardware", "h100 sxm5", *NAPKIN, "--dtype", "fp16")


def test_hardware_is_read_as_pdx_import_reads_it():
    """"2x RTX 3090" (a layer split: prefill's FLOP/s x 2, decode's bandwidth x 1) and "M1 8GB" (a Mac's memory)
    mean here what they mean to `pdx import --hardware`, so both give one ceiling."""
    one = json.loads(pdx_ok("ceiling", "--hardware", "RTX 3090", *NAPKIN, "--dtype", "fp16", "--json"))
    two = json.loads(pdx_ok("ceiling", "--hardware", "2x RTX 3090", *NAPKIN, "--dtype", "fp16", "--json"))
    assert two["hardware"]["flops"] == 2 * one["hardware"]["flops"]
    assert two["hardware"]["bandwidth"] == one["hardware"]["bandwidth"] and "2 x" in two["hardware"]["label"]
    mac = json.loads(pdx_ok("ceiling", "--hardware", "M1 8GB", *NAPKIN, "--json"))
    assert mac["hardware"]["memory_bytes"] == 8 * 2**30
    assert_one_line_error(run_pdx("ceiling", "--hardware", "M1 64GB", *NAPKIN), "comes with at most 16 GB")


def test_llama_3_3_70b_kv_cache():
    dims = ("--n-layers", "80", "--n-kv-heads", "8", "--head-dim", "128")
    out = pdx_ok("kv", *dims, "--context", "131072")
    assert "327,680 bytes/token" in out and "131,072 tokens: 42.95 GB" in out
    report = json.loads(pdx_ok("kv", *dims, "--context", "131072", "--json"))
    assert report["bytes_per_token"] == 327_680 and report["contexts"][0]["bytes_per_sequence"] == 327_680 * 131_072
    wide = json.loads(pdx_ok("kv", "--n-layers", "80", "--n-kv-heads", "64", "--head-dim", "128", "--json"))
    assert wide["bytes_per_token"] == 2.5 * 2**20
    assert "(2.50 MiB)" in pdx_ok("kv", "--n-layers", "80", "--n-kv-heads", "64", "--head-dim", "128")


def test_kv_from_a_model_file_a_shape_and_a_config(tiny_gguf, tmp_path):
    from_file = json.loads(pdx_ok("kv", "-m", str(tiny_gguf), "--json"))
    assert from_file["bytes_per_token"] == 2 * 2 * 32 * 2 * 2  # 2 KV heads x 32 dim x 2 layers, f16
    shape = json.loads(pdx_ok("kv", "--shape", "llama-3-8b", "-c", "8192", "-b", "4", "--memory", "80GB", "--json"))
    assert shape["bytes_per_token"] == 2 * 8 * 128 * 32 * 2 and shape["contexts"][0]["fit"]["max_batch"] > 4
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
                                  "hidden_size": 8192, "max_position_embeddings": 131072}))
    report = json.loads(pdx_ok("kv", "--config", str(config), "--json"))
    assert report["bytes_per_token"] == 327_680 and report["contexts"][0]["context"] == 131072


def test_ceiling_from_a_model_file_and_a_catalog_chip(tiny_gguf):
    report = json.loads(pdx_ok("ceiling", "-m", str(tiny_gguf), "--hardware", "rtx 4090", "--json"))
    assert report["hardware"]["flops_dtype"] == "fp16" and report["decode"]["bound"] in ("memory", "compute")
    assert report["model"]["kv_bytes_per_token"] == 512 and report["knee_batch"] > 0


def _gguf_without_heads(path):
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_embedding_length(64)
    writer.add_tensor("token_embd.weight", np.zeros((16, 64), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize("args, needles", [
    (["ceiling", "--hardware", "h1000", *NAPKIN], ["unknown hardware 'h1000'", "h100"]),
    (["kv", "--n-layers", "80", "--n-kv-heads", "8", "--head-dim", "128", "--hardware", "nope-9000"],
     ["unknown hardware 'nope-9000'"]),
    (["ceiling", "--bandwidth", "-400GB/s", *NAPKIN], ["--bandwidth", "is negative"]),
    (["ceiling", "--bandwidth", "0TB/s", *NAPKIN], ["--bandwidth", "is zero"]),
    (["ceiling", "--bandwidth", "lots", *NAPKIN], ["--bandwidth", "cannot read 'lots'"]),
    (["ceiling", "--flops", "27TFLIPS", *NAPKIN], ["--flops", "unknown unit"]),
    (["ceiling", "--bandwidth", "400GB/s", "--model-bytes", "0GB", "--params", "7B"], ["--model-bytes", "is zero"]),
    (["ceiling", "--bandwidth", "400GB/s", "--params", "7B"], ["napkin form needs --model-bytes"]),
    (["ceiling", "--bandwidth", "400GB/s"], ["no model given"]),
    (["ceiling", *NAPKIN], ["no hardware given"]),
    (["ceiling", "--bandwidth", "400GB/s", *NAPKIN, "-d", "4096"], ["depth needs the model's KV dimensions"]),
    (["ceiling", "--bandwidth", "400GB/s", *NAPKIN, "--measured", "-5"], ["--measured"]),
    (["kv", "--n-layers", "80"], ["KV heads, head dim are missing"]),
    (["kv", "--n-layers", "80", "--n-kv-heads", "8", "--head-dim", "128", "--kv-type", "q3"],
     ["unknown KV-cache type 'q3'"]),
    (["kv", "--n-layers", "80", "--n-kv-heads", "8", "--head-dim", "128", "--memory", "-1GB"], ["--memory",
                                                                                                "negative"]),
    (["kv"], ["no model given"]),
])
def test_bad_input_is_one_line(args, needles):
    assert_one_line_error(run_pdx(*args), *needles)


def test_a_model_file_missing_its_head_counts_is_one_line(tmp_path):
    path = _gguf_without_heads(tmp_path / "headless.gguf")
    assert_one_line_error(run_pdx("kv", "-m", str(path)), "KV heads, head dim are missing")


def test_the_napkin_form_of_speculative_decoding(tiny_gguf):
    """`pdx ceiling --accept-length L --draft-tokens K --draft-model SIZE|FILE`: per output token 1/L passes
    of the target and K/L drafted tokens, each reading the draft's weights once (issue 29)."""
    common = ("ceiling", "--hardware", "rtx 4090", "--shape", "llama-3.1-8b", "--type", "q4_0", "--json")
    plain = json.loads(run_pdx(*common).stdout)["decode"]
    found = json.loads(run_pdx(*common, "--accept-length", "3", "--draft-tokens", "4", "--draft-model", "0.5GB",
                               "--measured", "300").stdout)
    decode, bandwidth = found["decode"], found["hardware"]["bandwidth"]
    assert decode["speculative"]["single_token_ceiling"] == pytest.approx(plain["ceiling"])
    assert decode["ceiling"] == pytest.approx(1 / ((1 / 3) / plain["ceiling"] + (4 / 3) * 0.5e9 / bandwidth))
    assert decode["fraction"] == pytest.approx(300 / decode["ceiling"]) and not decode["above_ceiling"]
    by_file = json.loads(run_pdx(*common, "--accept-length", "2", "--draft-model", str(tiny_gguf)).stdout)["decode"]
    assert by_file["speculative"]["draft_bytes"] == tiny_gguf.stat().st_size
    text = run_pdx(*common[:-1], "--accept-length", "2").stdout
    assert "speculative: 0.50 target passes, the draft's reads not counted per token" in text


@pytest.mark.parametrize("args, needles", [
    (("--draft-model", "1GB"), ("need --accept-length",)),
    (("--accept-length", "3", "--draft-tokens", "1"), ("fewer than the 2 accepted drafts",)),
    (("--accept-length", "0.5"), ("--accept-length",)),
])
def test_speculation_napkin_bad_input_is_one_line(args, needles):
    assert_one_line_error(run_pdx("ceiling", "--hardware", "rtx 4090", "--shape", "llama-3.1-8b", *args), *needles)
