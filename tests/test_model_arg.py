"""What --model names: paths, synth:SHAPE[:TYPE] and Hugging Face Hub repo ids,
and the MLX plugin where MLX is not installed (the unit environment)."""

import importlib.util
import json

import pytest

from pdx.base import plugin_manager

from pdx.domain.models import hub

from pdx.measure import model_arg
from pdx.contract.errors import ModelError
from pdx.domain.synth import get_shape, write_hf

from conftest import assert_one_line_error, run_pdx


@pytest.mark.parametrize("text, expected", [
    ("mlx-community/Llama-3.2-1B-Instruct-4bit", True),
    ("meta-llama/Llama-3.1-8B", True),
    ("./models/llama", False),      # explicitly relative: a path
    ("/models/llama", False),
    ("~/llama", False),
    ("models/llama/8b", False),     # deeper than owner/name
    ("owner/model.gguf", False),    # a file name
    ("just-a-name", False),
])
def test_what_counts_as_a_repo_id(text, expected):
    assert hub.is_repo_id(text) is expected


def test_a_local_owner_folder_makes_it_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hub.is_repo_id("models/llama")
    (tmp_path / "models").mkdir()
    assert not hub.is_repo_id("models/llama")  # a mistyped path beside its folder, not a Hub model


def test_synth_names_pick_each_backend_s_own_format(tmp_path, monkeypatch):
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))
    spec = model_arg.parse("synth:tiny:q4")
    assert spec == model_arg.SynthModel("tiny", "q4")
    assert model_arg.parse("synth:tiny:Q4_0") == spec and model_arg.parse("synth:tiny:mlx-q4") == spec
    gguf = model_arg.resolve(spec, plugin_manager.get_backend("llamacpp"))
    assert (gguf.format, gguf.dtype, gguf.synthetic) == ("gguf", "Q4_0", "tiny")
    with pytest.raises(ModelError, match="synth type bf16 has no gguf form"):
        model_arg.resolve(model_arg.parse("synth:tiny:bf16"), plugin_manager.get_backend("llamacpp"))


def test_a_repo_id_for_a_backend_without_hub_models_is_not_found():
    with pytest.raises(ModelError, match="model not found: owner/name; give a local path"):
        model_arg.resolve(model_arg.HubModel("owner/name"), plugin_manager.get_backend("llamacpp"))


@pytest.mark.parametrize("arg, needles", [
    ("synth:huge", ["unknown shape 'huge'"]),
    ("synth:tiny:q3", ["unknown synth type 'q3'", "f32, f16, bf16, q8, q4"]),
])
def test_bad_synth_names_are_one_line(arg, needles, registry_url):
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "-m", arg), *needles)


def test_mlx_quantised_layout(tmp_path):
    from safetensors.numpy import load_file

    shape = get_shape("tiny")
    for dtype, bits in (("mlx-q4", 4), ("q8", 8)):
        path = write_hf(shape, dtype, tmp_path / dtype)
        config = json.loads((path / "config.json").read_text())
        assert config["quantization"] == {"group_size": 64, "bits": bits, "mode": "affine"}
        tensors = load_file(path / "model.safetensors")  # the reference reader agrees with the header
        down = "model.layers.0.mlp.down_proj"
        assert tensors[f"{down}.weight"].shape == (shape.n_embd, shape.n_ff * bits // 32)
        assert tensors[f"{down}.weight"].dtype.name == "uint32"
        assert tensors[f"{down}.scales"].shape == tensors[f"{down}.biases"].shape == (shape.n_embd, shape.n_ff // 64)
        assert tensors["model.layers.0.input_layernorm.weight"].dtype.name == "float16"
        assert "model.embed_tokens.scales" in tensors
        from pdx.domain.models import identify

        info = identify(path)
        assert (info.dtype, info.n_params) == (f"q{bits}", shape.n_params)  # parameters, not packed words


@pytest.mark.skipif(importlib.util.find_spec("mlx") is not None, reason="MLX is installed here")
def test_mlx_not_installed_is_one_line(registry_url, tmp_path):
    model = write_hf(get_shape("tiny"), "float32", tmp_path / "tiny")
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "--backend", "mlx", "-m", str(model)),
                          "backend mlx is not available: MLX is not installed", 'pip install "mlx-lm')
    listed = run_pdx("backends").stdout
    assert "mlx" in listed and "MLX is not installed" in listed
