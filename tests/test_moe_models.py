"""Mixture-of-experts in the model identity: counts from the metadata, exact
bytes of routed experts and of everything else from the tensor tables, active
parameters, sliding windows; the synthetic tiny-moe in GGUF and HF; and
`pdx model info` showing all of it."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdx.domain import ceilings
from pdx.base.units import human_count
from pdx.domain.models import expert_summary, identify
from pdx.domain.synth import get_shape, write_gguf, write_hf

from conftest import run_pdx

TINY = get_shape("tiny-moe")
EXPERT_PARAMS = TINY.n_layers * 3 * TINY.n_experts * TINY.expert_ff * TINY.n_embd


@pytest.fixture(scope="module")
def moe_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("moe")
    return {"f16": write_gguf(TINY, "f16", root / "f16.gguf"), "q8_0": write_gguf(TINY, "q8_0", root / "q8.gguf"),
            "hf": write_hf(TINY, "float32", root / "hf")}


def test_a_moe_gguf_names_its_experts_and_their_exact_bytes(moe_files):
    info = identify(moe_files["f16"])
    experts = info.extra["experts"]
    assert (experts["count"], experts["used"], experts["shared"]) == (8, 2, 0)
    assert experts["expert_params"] == EXPERT_PARAMS and experts["expert_bytes"] == EXPERT_PARAMS * 2
    assert experts["non_expert_params"] + experts["expert_params"] == info.n_params == TINY.n_params
    assert experts["active_params"] == TINY.active_params == info.n_params - EXPERT_PARAMS * 6 // 8


def test_a_quantised_moe_gguf_s_bytes_come_from_its_tensor_table(moe_files):
    info = identify(moe_files["q8_0"])
    assert info.extra["experts"]["expert_bytes"] == EXPERT_PARAMS * 34 // 32
    assert info.extra["tensor_type_bytes"]["Q8_0"] == info.extra["tensor_types"]["Q8_0"] * 34 // 32
    assert info.extra["tensor_type_bytes"]["F32"] == info.extra["tensor_types"]["F32"] * 4  # the routers


def test_a_moe_hf_directory_is_mixtral_with_the_same_experts(moe_files):
    config = json.loads((moe_files["hf"] / "config.json").read_text())
    assert config["architectures"] == ["MixtralForCausalLM"] and config["num_local_experts"] == 8
    info = identify(moe_files["hf"])
    experts = info.extra["experts"]
    assert info.n_params == TINY.n_params and experts["expert_params"] == EXPERT_PARAMS
    assert experts["expert_bytes"] == EXPERT_PARAMS * 4 and experts["active_params"] == TINY.active_params


def test_the_ceilings_read_active_bytes_from_the_identity(moe_files):
    info = identify(moe_files["f16"]).to_dict()
    figures = ceilings.model_figures(info)
    unread = info["extra"]["embedding_bytes"] + EXPERT_PARAMS * 2 * 6 / 8
    assert figures.step_bytes == pytest.approx(info["file_bytes"] - unread)
    assert figures.active_params == TINY.active_params


def test_dense_models_carry_no_experts(tiny_gguf):
    assert "experts" not in identify(tiny_gguf).extra


def _gguf(path, arch, tensors, **keys):
    import gguf

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(4)
    writer.add_embedding_length(64)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    for key, value in keys.items():
        writer.add_uint32(f"{arch}.{key}", value)
    for name, shape in tensors:
        writer.add_tensor(name, np.zeros(shape, dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_shared_experts_count_with_the_weights_always_read(tmp_path):
    tensors = [("token_embd.weight", (64, 64)), ("blk.0.ffn_gate_exps.weight", (4, 32, 64)),
               ("blk.0.ffn_up_shexp.weight", (32, 64))]
    info = identify(_gguf(tmp_path / "q.gguf", "qwen2moe", tensors, expert_count=4, expert_used_count=1,
                          expert_shared_count=1))
    experts = info.extra["experts"]
    assert experts["shared"] == 1 and experts["shared_expert_params"] == 32 * 64
    assert experts["expert_params"] == 4 * 32 * 64 and experts["active_params"] == 64 * 64 + 32 * 64 + 32 * 64


def test_a_gguf_sliding_window_and_the_architecture_s_pattern(tmp_path):
    path = _gguf(tmp_path / "oss.gguf", "gpt-oss", [("token_embd.weight", (64, 64))])
    import gguf

    assert "sliding_window" not in identify(path).extra
    writer = gguf.GGUFWriter(str(tmp_path / "w.gguf"), "gpt-oss")
    writer.add_block_count(4)
    writer.add_uint32("gpt-oss.attention.sliding_window", 128)
    writer.add_tensor("token_embd.weight", np.zeros((64, 64), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    extra = identify(tmp_path / "w.gguf").extra
    assert extra["sliding_window"] == 128 and extra["sliding_layers"] == 2  # gpt-oss alternates


def test_an_hf_gpt_oss_config_with_fused_experts_and_layer_types(tmp_path):
    from safetensors.numpy import save_file

    config = {"model_type": "gpt_oss", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512, "num_local_experts": 4,
              "num_experts_per_tok": 2, "sliding_window": 128,
              "layer_types": ["sliding_attention", "full_attention"]}
    (tmp_path / "config.json").write_text(json.dumps(config))
    save_file({"model.embed_tokens.weight": np.zeros((512, 64), np.float16),
               "model.layers.0.mlp.router.weight": np.zeros((4, 64), np.float16),
               "model.layers.0.mlp.experts.gate_up_proj": np.zeros((4, 64, 256), np.float16),
               "model.layers.0.mlp.experts.down_proj": np.zeros((4, 128, 64), np.float16)},
              str(tmp_path / "model.safetensors"))
    info = identify(tmp_path)
    experts = info.extra["experts"]
    assert experts["count"] == 4 and experts["used"] == 2
    assert experts["expert_params"] == 4 * 64 * 256 + 4 * 128 * 64
    assert experts["expert_bytes"] == experts["expert_params"] * 2
    assert info.extra["sliding_window"] == 128 and info.extra["sliding_layers"] == 1
    assert ceilings.model_figures(info.to_dict()).kv.n_sliding_layers == 1


@given(count=st.integers(1, 512), used=st.integers(1, 512), expert=st.integers(0, 10**12),
       rest=st.integers(0, 10**12))
def test_active_parameters_lie_between_the_rest_and_the_total(count, used, expert, rest):
    used = min(used, count)
    summary = expert_summary(count, used, 0, expert + rest, 2 * (expert + rest), expert, 2 * expert)
    assert rest - 1 <= summary["active_params"] <= expert + rest + 1
    assert summary["non_expert_bytes"] == 2 * rest


def test_model_info_shows_experts_total_and_active_parameters(moe_files):
    for path in (moe_files["f16"], moe_files["hf"]):
        result = run_pdx("model", "info", str(path))
        assert result.returncode == 0, result.stderr
        assert "experts: 2 of 8 per token" in result.stdout
        assert f"active: {human_count(TINY.active_params)} ({TINY.active_params}) of {human_count(TINY.n_params)} " \
            "parameters per token" in result.stdout


def test_model_synth_writes_tiny_moe_in_both_layouts(tmp_path):
    for layout, out in (("gguf", tmp_path / "m.gguf"), ("hf", tmp_path / "m-hf")):
        result = run_pdx("model", "synth", "--shape", "tiny-moe", "--format", layout, "-o", str(out), "--json",
                         *(["--type", "float32"] if layout == "hf" else []))
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["extra"]["experts"]["count"] == 8
