"""The model catalog: every named shape defined once, with the published
config.json of each real model, and the attention details that change KV
bytes (grouped-query heads, sliding-window layers, head dims of their own)
reaching `pdx kv` and the ceilings."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdx.domain.models import kvcache
from pdx.domain.synth import SHAPES, get_shape
from pdx.domain.synth.shapes import catalog

from conftest import run_pdx

REQUIRED = ["llama-3.1-8b", "llama-3.3-70b", "qwen3-8b", "qwen3-30b-a3b", "gpt-oss-20b", "gpt-oss-120b",
            "mixtral-8x7b", "gemma-3-12b", "tiny-moe"]


def pdx_json(*args) -> dict:
    result = run_pdx(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_catalog_names_its_models_and_the_source_of_every_dimension():
    entries = {m["name"]: m for m in catalog()["models"]}
    assert set(REQUIRED) <= set(entries) and set(entries) == set(SHAPES)
    for name, entry in entries.items():
        assert entry["source"].startswith(("https://huggingface.co/", "pdx synthetic")), name
        assert "config.json" in entry["source"] or "synthetic" in entry["source"]
        assert set(entry) - {"name", "source", "architecture"} <= set(catalog()["fields"]), name


@pytest.mark.parametrize("name, total, active", [
    ("llama-3.1-8b", 8.03e9, 8.03e9), ("llama-3.3-70b", 70.6e9, 70.6e9), ("qwen3-8b", 8.19e9, 8.19e9),
    ("qwen3-30b-a3b", 30.5e9, 3.35e9), ("mixtral-8x7b", 46.7e9, 12.9e9), ("gpt-oss-20b", 20.9e9, 4.19e9),
    ("gpt-oss-120b", 116.8e9, 5.71e9), ("gemma-3-12b", 11.77e9, 11.77e9),
])
def test_shapes_have_their_published_parameter_counts(name, total, active):
    shape = get_shape(name)
    assert shape.n_params == pytest.approx(total, rel=0.01)
    assert shape.active_params == pytest.approx(active, rel=0.01)


def test_head_dims_of_their_own_size_the_attention():
    qwen = get_shape("qwen3-30b-a3b")
    assert qwen.head_dim == 128 and qwen.n_heads * qwen.head_dim != qwen.n_embd
    q = next(dims for role, layer, dims in qwen.tensors() if role == "q")
    assert q == (32 * 128, 2048)


def test_kv_for_gpt_oss_20b_caps_its_sliding_window_layers():
    report = pdx_json("kv", "--shape", "gpt-oss-20b", "-c", "131072")
    per_layer = 2 * 8 * 64 * 2
    assert report["dims"]["n_sliding_layers"] == 12 and report["dims"]["sliding_window"] == 128
    assert report["contexts"][0]["bytes_per_sequence"] == per_layer * (12 * 131072 + 12 * 128)
    text = run_pdx("kv", "--shape", "gpt-oss-20b", "-c", "131072").stdout
    assert "12 of 24 layers keep only the last 128 tokens" in text


def test_kv_for_llama_3_3_70b_is_unchanged():
    report = pdx_json("kv", "--shape", "llama-3.3-70b", "-c", "131072")
    assert report["bytes_per_token"] == 327_680
    assert report["contexts"][0]["bytes_per_sequence"] == 327_680 * 131_072


def test_a_config_json_s_layer_types_and_window_pattern(tmp_path):
    oss = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
           "hidden_size": 512, "sliding_window": 128,
           "layer_types": ["sliding_attention", "full_attention"] * 2}
    assert kvcache.config_sliding_layers(oss) == (128, 2)
    assert kvcache.config_sliding_layers({"num_hidden_layers": 12, "sliding_window": 1024,
                                          "sliding_window_pattern": 6}) == (1024, 10)
    assert kvcache.config_sliding_layers({"num_hidden_layers": 12, "sliding_window": 4096,
                                          "use_sliding_window": False}) == (None, 0)  # Qwen
    assert kvcache.config_sliding_layers({"num_hidden_layers": 12, "sliding_window": None}) == (None, 0)  # Mixtral
    path = tmp_path / "config.json"
    path.write_text(json.dumps(oss))
    dims = kvcache.dims_from_config(path)
    assert dims.bytes_at(1000) == 2 * 2 * 64 * 2 * (2 * 1000 + 2 * 128)


@given(layers=st.integers(1, 128), sliding=st.integers(0, 128), window=st.integers(1, 8192),
       context=st.integers(1, 1 << 20))
def test_sliding_windows_never_add_bytes(layers, sliding, window, context):
    sliding = min(sliding, layers)
    dims = kvcache.make_dims("t", layers, 8, 128, sliding_window=window, n_sliding_layers=sliding)
    full = kvcache.make_dims("t", layers, 8, 128)
    assert dims.bytes_at(context) <= full.bytes_at(context) == full.bytes_per_token() * context
    assert dims.bytes_at(min(context, window)) == full.bytes_at(min(context, window))


def test_sliding_windows_reach_the_ceilings():
    report = pdx_json("ceiling", "--hardware", "h100 sxm", "--shape", "gpt-oss-20b", "--type", "mxfp4", "-d", "100000")
    decode, per_layer = report["decode"], 2 * 8 * 64 * 2
    kv = per_layer * (12 * decode["context"] + 12 * 128)  # half the layers hold 128 tokens
    assert decode["bytes_per_token"] == pytest.approx(report["model"]["weight_bytes_per_step"] + kv)
    assert report["model"]["sliding_layers"] == 12


@pytest.mark.parametrize("text, name", [
    ("gpt-oss 120B MXFP4 MoE", "gpt-oss-120b"), ("gpt-oss 20B MXFP4 MoE", "gpt-oss-20b"),
    ("qwen3moe 30B.A3B Q4_K - Medium", "qwen3-30b-a3b"), ("Qwen3-30B-A3B-Q4_K_M.gguf", "qwen3-30b-a3b"),
    ("Meta-Llama-3.1-8B-Instruct-Q4_K_M", "llama-3.1-8b"), ("Mixtral-8x7B-v0.1.Q4_K_M.gguf", "mixtral-8x7b"),
    ("gemma-3-12b-it-Q4_K_M", "gemma-3-12b"), ("llama 8B Q4_0", "llama-3.1-8b"), ("tiny", None),
])
def test_a_free_form_model_name_finds_its_catalog_shape(text, name):
    from pdx.domain.synth.shapes import find_shape

    found = find_shape(text)
    assert (found.name if found else None) == name


@given(st.text(max_size=80))
def test_any_name_finds_a_real_shape_or_none(text):
    from pdx.domain.synth.shapes import find_shape

    found = find_shape(text)
    assert found is None or not found.source.startswith("pdx")
