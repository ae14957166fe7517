"""Synthetic Gemma 3 and gpt-oss models written in their own architectures (engine-free): GGUF
``gemma3`` / ``gpt-oss`` and HF ``Gemma3ForCausalLM`` / ``GptOssForCausalLM`` with the weights their
engines load (q/k norms and post norms; biases, sinks and fused experts), the sliding-window layers
said in the file, parameter counts exact against the shape and the published figures, and `pdx model
info` reading it all back. The engines run them in tests/test_{llamacpp,vllm,mlx}_sliding_window.py."""

import dataclasses
import json
import struct

import numpy as np
import pytest

from pdx.contract.errors import ModelError
from pdx.domain.models import identify
from pdx.domain.synth import get_shape, write_gguf, write_hf
from pdx.domain.synth.gguf_writer import expected_file_bytes
from pdx.domain.synth.hf_writer import hf_tensor_shapes

from conftest import run_pdx

GEMMA, OSS = get_shape("tiny-gemma3"), get_shape("tiny-gpt-oss")
SHAPES = {"gemma3": GEMMA, "gpt-oss": OSS}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("sliding")
    out = {}
    for arch, shape in SHAPES.items():
        out[arch, "f16"] = write_gguf(shape, "f16", root / f"{arch}-f16.gguf")
        out[arch, "q8_0"] = write_gguf(shape, "q8_0", root / f"{arch}-q8.gguf")
        out[arch, "hf"] = write_hf(shape, "float32", root / f"{arch}-hf")
        out[arch, "mlx"] = write_hf(shape, "mlx-q8", root / f"{arch}-mlx")
    return out


def _gguf(path):
    import gguf

    reader = gguf.GGUFReader(path)
    return reader, {t.name: t for t in reader.tensors}


def _header(directory) -> dict:
    data = (directory / "model.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    return {k: v for k, v in json.loads(data[8:8 + length]).items() if k != "__metadata__"}


@pytest.mark.parametrize("arch", SHAPES)
@pytest.mark.parametrize("dtype", ["f16", "q8_0"])
def test_gguf_is_written_in_its_own_architecture_and_reads_back(files, arch, dtype):
    shape, path = SHAPES[arch], files[arch, dtype]
    info = identify(path)
    assert info.architecture == arch and info.synthetic == shape.name
    assert info.n_params == shape.n_params and info.file_bytes == expected_file_bytes(shape, dtype)
    assert info.extra["sliding_window"] == shape.sliding_window == 64
    assert info.extra["sliding_layers"] == shape.n_sliding_layers
    reader, _ = _gguf(path)
    pattern = reader.get_field(f"{arch}.attention.sliding_window_pattern").contents()
    assert pattern == [shape.sliding(i) for i in range(shape.n_layers)]  # per layer, not llama.cpp's default


def test_gemma3_gguf_has_its_norms_and_local_rope(files):
    reader, tensors = _gguf(files["gemma3", "f16"])
    for name in ("attn_q_norm", "attn_k_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"):
        norm = tensors[f"blk.5.{name}.weight"]
        assert norm.tensor_type.name == "F32" and (norm.data == 1).all()  # llama.cpp folds Gemma's 1 + w in
    assert tuple(tensors["blk.0.attn_q_norm.weight"].shape) == (GEMMA.head_dim,)
    assert "output.weight" not in tensors  # tied, as Gemma's are
    assert reader.get_field("gemma3.rope.freq_base_swa").contents() == 10000.0
    assert reader.get_field("gemma3.rope.freq_base").contents() == GEMMA.rope_theta


def test_gpt_oss_gguf_has_biases_sinks_and_expert_biases(files):
    reader, tensors = _gguf(files["gpt-oss", "q8_0"])
    e, eff, d = OSS.n_experts, OSS.expert_ff, OSS.n_embd
    shapes = {"attn_sinks.weight": (OSS.n_heads,), "attn_q.bias": (OSS.n_heads * OSS.head_dim,),
              "attn_output.bias": (d,), "ffn_gate_inp.bias": (e,), "ffn_gate_exps.bias": (eff, e),
              "ffn_down_exps.bias": (d, e), "post_attention_norm.weight": (d,)}
    for name, ne in shapes.items():  # ggml's order (innermost first)
        tensor = tensors[f"blk.1.{name}"]
        assert tuple(int(n) for n in tensor.shape) == ne and tensor.tensor_type.name == "F32", name
        assert (tensor.data == (1 if "norm" in name else 0)).all(), name
    assert tensors["blk.0.ffn_gate_exps.weight"].tensor_type.name == "Q8_0"
    assert reader.get_field("gpt-oss.expert_feed_forward_length").contents() == eff
    assert reader.get_field("gpt-oss.rope.scaling.type").contents() == "yarn"
    experts = identify(files["gpt-oss", "f16"]).extra["experts"]
    assert (experts["count"], experts["used"]) == (e, OSS.n_experts_used)
    assert experts["expert_params"] == OSS.expert_params and experts["active_params"] == OSS.active_params


def test_gemma3_hf_is_gemma3_for_causal_lm(files):
    path = files["gemma3", "hf"]
    config = json.loads((path / "config.json").read_text())
    assert config["architectures"] == ["Gemma3ForCausalLM"] and config["model_type"] == "gemma3_text"
    assert config["layer_types"] == ["sliding_attention"] * 5 + ["full_attention"]
    assert (config["sliding_window"], config["sliding_window_pattern"]) == (64, 6)
    assert config["query_pre_attn_scalar"] == GEMMA.head_dim and config["rope_local_base_freq"] == 10000.0
    assert config["tie_word_embeddings"] is True and config["rms_norm_eps"] == 1e-6
    header = _header(path)
    assert list(header) == [name for name, _ in hf_tensor_shapes(GEMMA)] and "lm_head.weight" not in header
    for name in ("self_attn.q_norm", "self_attn.k_norm", "post_attention_layernorm", "pre_feedforward_layernorm",
                 "post_feedforward_layernorm"):
        assert f"model.layers.0.{name}.weight" in header, name
    from safetensors.numpy import load_file

    weights = load_file(path / "model.safetensors")
    assert (weights["model.layers.0.post_feedforward_layernorm.weight"] == 0).all()  # (1 + w): the identity
    assert (weights["model.norm.weight"] == 0).all()
    info = identify(path)
    assert (info.architecture, info.n_params) == ("gemma3_text", GEMMA.n_params)
    assert (info.extra["sliding_window"], info.extra["sliding_layers"]) == (64, 5) and "experts" not in info.extra


def test_gpt_oss_hf_is_gpt_oss_for_causal_lm_with_fused_experts(files):
    path = files["gpt-oss", "hf"]
    config = json.loads((path / "config.json").read_text())
    assert config["architectures"] == ["GptOssForCausalLM"] and config["model_type"] == "gpt_oss"
    assert config["layer_types"] == ["sliding_attention", "full_attention"] * 2 and config["sliding_window"] == 64
    assert (config["num_local_experts"], config["num_experts_per_tok"]) == (OSS.n_experts, OSS.n_experts_used)
    assert config["rope_scaling"]["rope_type"] == "yarn"
    assert config["rope_scaling"]["factor"] * 4096 == OSS.n_ctx == config["max_position_embeddings"]
    e, eff, d = OSS.n_experts, OSS.expert_ff, OSS.n_embd
    header = _header(path)
    layer = "model.layers.3."
    expected = {"mlp.experts.gate_up_proj": [e, d, 2 * eff], "mlp.experts.gate_up_proj_bias": [e, 2 * eff],
                "mlp.experts.down_proj": [e, eff, d], "mlp.experts.down_proj_bias": [e, d],
                "mlp.router.weight": [e, d], "mlp.router.bias": [e], "self_attn.sinks": [OSS.n_heads],
                "self_attn.q_proj.bias": [OSS.n_heads * OSS.head_dim], "self_attn.o_proj.bias": [d],
                "post_attention_layernorm.weight": [d]}
    assert {k: header[layer + k]["shape"] for k in expected} == expected
    assert not any("up_proj." in k or ".w1." in k for k in header)  # fused, not Mixtral's
    data = (path / "model.safetensors").read_bytes()
    assert len(data) == 8 + struct.unpack("<Q", data[:8])[0] + OSS.n_params * 4  # float32, every weight once
    info = identify(path)
    experts = info.extra["experts"]
    assert (info.architecture, info.n_params) == ("gpt_oss", OSS.n_params)
    assert experts["expert_params"] == OSS.expert_params and experts["active_params"] == OSS.active_params
    assert experts["expert_bytes"] == OSS.expert_params * 4
    assert (info.extra["sliding_window"], info.extra["sliding_layers"]) == (64, 2)


def test_mlx_quantised_gpt_oss_is_in_mlx_lm_s_own_split_layout(files):
    path = files["gpt-oss", "mlx"]
    header = _header(path)
    e, eff, d = OSS.n_experts, OSS.expert_ff, OSS.n_embd
    gate = "model.layers.0.mlp.experts.gate_proj"
    assert header[f"{gate}.weight"] == {**header[f"{gate}.weight"], "dtype": "U32", "shape": [e, eff, d * 8 // 32]}
    assert header[f"{gate}.scales"]["shape"] == header[f"{gate}.biases"]["shape"] == [e, eff, d // 64]
    assert header[f"{gate}.bias"]["shape"] == [e, eff] and header[f"{gate}.bias"]["dtype"] == "F16"  # not packed
    assert header["model.layers.0.self_attn.sinks"]["dtype"] == "F16"
    assert not any("gate_up_proj" in k for k in header)
    info = identify(path)
    assert (info.dtype, info.n_params) == ("q8", OSS.n_params)  # parameters, not packed words
    assert info.extra["experts"]["active_params"] == OSS.active_params
    gemma = identify(files["gemma3", "mlx"])
    assert gemma.n_params == GEMMA.n_params
    assert "model.layers.0.self_attn.q_norm.weight" in _header(files["gemma3", "mlx"])


def test_published_parameter_counts_include_the_biases_sinks_and_norms():
    # OpenAI's model card: 116.83B and 20.91B in all, 5.13B and 3.61B active (the embedding table is a lookup).
    for name, total, active in (("gpt-oss-120b", 116.83e9, 5.13e9), ("gpt-oss-20b", 20.91e9, 3.61e9)):
        shape = get_shape(name)
        embedding = shape.n_vocab * shape.n_embd
        assert shape.n_params == pytest.approx(total, rel=1e-3)
        assert shape.active_params - embedding == pytest.approx(active, rel=2e-3)
    assert get_shape("gemma-3-12b").n_params == pytest.approx(11.766e9, rel=1e-3)


def test_a_family_s_experts_are_checked():
    with pytest.raises(ModelError, match="gemma3 model has no experts"):
        dataclasses.replace(GEMMA, n_experts=8, n_experts_used=2, n_ff_expert=256)
    with pytest.raises(ModelError, match="gpt-oss model routes to experts"):
        dataclasses.replace(OSS, n_experts=0, n_experts_used=0)


def test_weights_are_finite_and_small(files):
    from safetensors.numpy import load_file

    weights = load_file(files["gpt-oss", "hf"] / "model.safetensors")
    experts = weights["model.layers.0.mlp.experts.gate_up_proj"]
    assert np.isfinite(experts).all() and 0 < np.abs(experts).max() < 0.25 and (experts < 0).any()


@pytest.mark.parametrize("arch, layout", [("gpt-oss", "f16"), ("gpt-oss", "hf"), ("gemma3", "f16"), ("gemma3", "hf")])
def test_model_info_shows_architecture_experts_and_window(files, arch, layout):
    result = run_pdx("model", "info", str(files[arch, layout]))
    assert result.returncode == 0, result.stderr
    text = result.stdout
    shown = {"gpt-oss": "gpt_oss", "gemma3": "gemma3_text"}[arch] if layout == "hf" else arch  # the file's own name
    assert f"architecture: {shown}\n" in text
    assert f"{SHAPES[arch].n_sliding_layers} layers attend to the last 64 tokens" in text
    assert f"({SHAPES[arch].n_params})" in text
    if arch == "gpt-oss":
        assert "2 of 8 per token" in text and f"({OSS.active_params}) of" in text
    else:
        assert "experts" not in text


def test_a_cache_written_as_llama_by_an_older_pdx_is_written_again(tmp_path, monkeypatch):
    import gguf

    from pdx.domain.synth import ensure_gguf, ensure_hf
    from pdx.domain.synth.gguf_writer import default_model_path
    from pdx.domain.synth.hf_writer import default_hf_path

    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))
    as_llama = dataclasses.replace(OSS, architecture="llama", sliding_window=0, sliding_pattern=0)
    write_gguf(as_llama, "f16", default_model_path(OSS.name, "f16"))
    write_hf(as_llama, "f16", default_hf_path(OSS.name, "f16"))
    path = ensure_gguf(OSS.name, "f16")
    assert gguf.GGUFReader(path).get_field("general.architecture").contents() == "gpt-oss"
    directory = ensure_hf(OSS.name, "f16")
    assert json.loads((directory / "config.json").read_text())["architectures"] == ["GptOssForCausalLM"]
    mtime = (directory / "model.safetensors").stat().st_mtime_ns
    assert ensure_hf(OSS.name, "f16") == directory and (directory / "model.safetensors").stat().st_mtime_ns == mtime
