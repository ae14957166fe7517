import dataclasses
import json
import struct

import numpy as np
import pytest

from pdx.contract.errors import ModelError, PdxError
from pdx.domain.models import identify
from pdx.domain.synth import GGUF_TYPES, SHAPES, get_shape, vocabulary, write_gguf
from pdx.domain.synth.gguf_writer import expected_file_bytes

from conftest import assert_one_line_error, run_pdx


@pytest.mark.parametrize("dtype", list(GGUF_TYPES))
def test_synthetic_gguf_reads_back_with_its_shape(tmp_path, dtype):
    shape = get_shape("tiny")
    path = write_gguf(shape, dtype, tmp_path / f"tiny-{dtype}.gguf")
    info = identify(path)
    assert info.format == "gguf" and info.architecture == "llama"
    assert info.dtype == dtype.upper()
    assert info.n_params == shape.n_params
    assert (info.n_layers, info.n_heads, info.n_kv_heads, info.head_dim) == (2, 4, 2, 32)
    assert (info.n_embd, info.n_ff, info.n_vocab) == (shape.n_embd, shape.n_ff, shape.n_vocab)
    assert info.synthetic == "tiny"
    assert info.file_bytes == path.stat().st_size == expected_file_bytes(shape, dtype)
    assert len(info.sha256) == 64


def test_weights_are_finite_and_seeded(tmp_path):
    import gguf

    a = write_gguf(get_shape("tiny"), "f16", tmp_path / "a.gguf", seed=1)
    b = write_gguf(get_shape("tiny"), "f16", tmp_path / "b.gguf", seed=1)
    c = write_gguf(get_shape("tiny"), "f16", tmp_path / "c.gguf", seed=2)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    weights = [t for t in gguf.GGUFReader(a).tensors if t.name == "blk.0.attn_q.weight"][0].data
    assert np.isfinite(weights).all() and 0 < np.abs(weights).max() < 0.25


def test_real_model_shapes_have_their_real_sizes():
    # Llama-2-7B has 6.74B parameters; Q4_0 stores 4.5 bits a weight: about 3.8 GB.
    assert SHAPES["llama-2-7b"].n_params == pytest.approx(6.74e9, rel=0.01)
    assert expected_file_bytes(SHAPES["llama-2-7b"], "q4_0") == pytest.approx(3.8e9, rel=0.02)
    assert SHAPES["llama-3-8b"].n_params == pytest.approx(8.03e9, rel=0.01)
    assert SHAPES["100m"].n_params == pytest.approx(106e6, rel=0.01)


def test_explicit_dims_override_a_shape():
    shape = get_shape("tiny").with_dims(n_layers=3, n_embd=256)
    assert (shape.n_layers, shape.n_embd, shape.name) == (3, 256, "tiny-custom")
    with pytest.raises(ModelError, match="multiple of"):
        get_shape("tiny").with_dims(n_heads=3)


def test_unknown_shape_and_type(tmp_path):
    with pytest.raises(ModelError, match="unknown shape"):
        get_shape("llama-9000")
    with pytest.raises(ModelError, match="unknown GGUF type"):
        write_gguf(get_shape("tiny"), "q3_k", tmp_path / "x.gguf")


def test_identify_rejects_missing_and_foreign_files(tmp_path):
    with pytest.raises(ModelError, match="model not found"):
        identify(tmp_path / "nope.gguf")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ModelError, match="not a GGUF file"):
        identify(tmp_path / "notes.txt")
    (tmp_path / "trunc.gguf").write_bytes(b"GGUF\x03\x00")
    with pytest.raises(ModelError, match="cannot be read as GGUF"):
        identify(tmp_path / "trunc.gguf")


def test_identify_hugging_face_directory(tmp_path):
    config = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 512}
    (tmp_path / "config.json").write_text(json.dumps(config))
    header = json.dumps({"w": {"dtype": "F32", "shape": [100, 64], "data_offsets": [0, 25600]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(25600))
    info = identify(tmp_path)
    assert (info.format, info.n_params, info.dtype, info.n_kv_heads, info.head_dim) == ("hf", 6400, "f32", 2, 16)


def test_hash_is_cached_by_path_size_and_mtime(tmp_path):
    from pdx.domain.models import content_hash

    path = tmp_path / "blob"
    path.write_bytes(b"a" * 1000)
    first = content_hash(path)
    assert content_hash(path) == first
    path.write_bytes(b"b" * 1001)
    assert content_hash(path) != first


def test_model_synth_and_info_commands(tmp_path):
    out = tmp_path / "m.gguf"
    result = run_pdx("model", "synth", "--shape", "tiny", "--type", "q8_0", "--n-layers", "3", "-o", str(out), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["n_layers"] == 3
    info = json.loads(run_pdx("model", "info", str(out), "--json").stdout)
    assert info["dtype"] == "Q8_0" and info["synthetic"] == "tiny-custom"
    assert "parameters" in run_pdx("model", "info", str(out)).stdout
    assert_one_line_error(run_pdx("model", "info", str(tmp_path / "missing.gguf")), "model not found")
    assert_one_line_error(run_pdx("model", "synth", "--shape", "nope", "-o", str(out)), "unknown shape")


@pytest.mark.parametrize("dtype, st_dtype, width", [("float32", "F32", 4), ("f16", "F16", 2), ("bf16", "BF16", 2)])
def test_synthetic_hf_model_has_hf_names_and_reads_back(tmp_path, dtype, st_dtype, width):
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    from pdx.domain.synth import write_hf
    from pdx.domain.synth.hf_writer import hf_tensor_shapes

    shape = get_shape("tiny")
    path = write_hf(shape, dtype, tmp_path / "tiny")
    config = json.loads((path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["model_type"] == "llama"
    assert config["tie_word_embeddings"] is False and config["vocab_size"] == shape.n_vocab
    info = identify(path)
    assert info.format == "hf" and info.n_params == shape.n_params and info.synthetic == "tiny"
    assert (info.n_layers, info.n_heads, info.n_kv_heads, info.head_dim) == (2, 4, 2, 32)
    header_len = struct.unpack("<Q", (path / "model.safetensors").read_bytes()[:8])[0]
    header = json.loads((path / "model.safetensors").read_bytes()[8:8 + header_len])
    names = [name for name, _ in hf_tensor_shapes(shape)]
    assert [k for k in header if k != "__metadata__"] == names
    assert {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight",
            "model.layers.1.mlp.down_proj.weight", "model.layers.0.self_attn.k_proj.weight"} <= set(names)
    assert all(meta["dtype"] == st_dtype for k, meta in header.items() if k != "__metadata__")
    assert header["model.layers.0.self_attn.k_proj.weight"]["shape"] == [64, 128]
    assert (path / "model.safetensors").stat().st_size == 8 + header_len + shape.n_params * width
    if st_dtype != "BF16":  # numpy has no bfloat16
        weights = load_file(path / "model.safetensors")
        q = weights["model.layers.0.self_attn.q_proj.weight"].astype(np.float32)
        assert np.isfinite(q).all() and 0 < np.abs(q).max() < 0.25 and (q < 0).any()
        assert (weights["model.norm.weight"] == 1).all()
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    assert tokenizer.get_vocab_size() == shape.n_vocab
    first = vocabulary.FIRST_WORD_ID
    assert tokenizer.encode("t5 "
                            "t9").ids == [first + 5, first + 9] and tokenizer.decode([first + 5, first + 9]) == "t5 t9"
    assert tokenizer.encode("</s>").ids == [vocabulary.EOS_ID]
    assert json.loads((path / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"


def test_synthetic_hf_models_are_seeded_and_tie_when_the_shape_does(tmp_path):
    from pdx.domain.synth import write_hf

    shape = get_shape("tiny")
    a, b = write_hf(shape, "f16", tmp_path / "a", seed=1), write_hf(shape, "f16", tmp_path / "b", seed=1)
    c = write_hf(shape, "f16", tmp_path / "c", seed=2)
    assert identify(a).sha256 == identify(b).sha256 != identify(c).sha256
    tied = write_hf(dataclasses.replace(shape, name="tied", tie_embeddings=True), "f16", tmp_path / "tied")
    assert json.loads((tied / "config.json").read_text())["tie_word_embeddings"] is True
    assert b"lm_head.weight" not in (tied / "model.safetensors").read_bytes()[:4096]
    with pytest.raises(ModelError, match="exists and is not empty"):
        write_hf(shape, "f16", a)
    with pytest.raises(ModelError, match="unknown HF weight type"):
        write_hf(shape, "q4_0", tmp_path / "q")


def test_hf_backends_get_a_default_synthetic_model(tmp_path, monkeypatch):
    from pdx.base import plugin_manager
    from pdx.measure import model_arg

    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(model_arg, "DEFAULT_SHAPE", "tiny")
    hf_backend = plugin_manager.get_backend("vllm")
    model = model_arg.resolve(None, hf_backend)
    assert model.format == "hf" and model.synthetic == "tiny" and model.dtype == "f16"
    assert model_arg.resolve(None, hf_backend).sha256 == model.sha256  # cached, not rewritten
    with pytest.raises(PdxError, match="is hf, which backend llamacpp does not load"):
        model_arg.resolve(model, plugin_manager.get_backend("llamacpp"))
    out = run_pdx("model", "synth", "--shape", "tiny", "--format", "hf", "--type", "float32",
                  "-o", str(tmp_path / "cli"), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["format"] == "hf" and (tmp_path / "cli" / "tokenizer.json").exists()


def test_a_quantised_synth_file_is_named_for_its_type(tmp_path, monkeypatch):
    """A quantiser keeps the f16 file's general.name, so the f16 is named for the type it becomes:
    `pdx model info` and a bench's model name say q4_k_m, not f16. The quantiser here copies its
    input (llama-quantize keeps every key of it the same way; tests/test_llamacpp_moe.py runs it)."""
    import shutil

    from pdx.base import plugin_manager
    from pdx.domain.synth.quantizers import Quantizer

    copy = Quantizer("copy", ("Q4_K_M",), lambda source, dest, qtype: shutil.copyfile(source, dest))
    monkeypatch.setattr(plugin_manager, "quantizers", lambda: (copy,))
    made = write_gguf(get_shape("tiny"), "q4_k_m", tmp_path / "tiny-q4_k_m.gguf")
    assert identify(made).name == "pdx-synth-tiny-q4_k_m"
    for dtype in GGUF_TYPES:  # pdx's own types as they were
        made = write_gguf(get_shape("tiny"), dtype, tmp_path / f"{dtype}.gguf")
        assert identify(made).name == f"pdx-synth-tiny-{dtype}"


def test_model_synth_hf_runs_again_over_its_own_model(tmp_path, monkeypatch):
    """`pdx model synth --format hf` twice (a README line): the second replaces the first, as the GGUF
    form's does, in its cache folder or at -o; a folder pdx did not write is still refused."""
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):
        done = run_pdx("model", "synth", "--shape", "tiny", "--format", "hf", "--type", "float16", "--json")
        assert done.returncode == 0, done.stderr
    folder = tmp_path / "cache" / "models" / "synth-tiny-float16-hf"
    assert json.loads(done.stdout)["dtype"] == "f16" and identify(folder).synthetic == "tiny"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["synth-tiny-float16-hf"]  # nothing left beside it
    out = tmp_path / "out"
    for seed in ("1", "2"):
        done = run_pdx("model", "synth", "--shape", "tiny", "--format", "hf", "-o", str(out), "--seed", seed)
        assert done.returncode == 0, done.stderr
    assert json.loads((out / "config.json").read_text())["pdx_synthetic_seed"] == 2
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert_one_line_error(run_pdx("model", "synth", "--shape", "tiny", "--format", "hf", "-o", str(mine)),
                          "holds no synthetic model pdx wrote")
    assert (mine / "notes.txt").read_text() == "keep"
