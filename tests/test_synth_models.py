import json
import struct

import numpy as np
import pytest

from pdx.errors import ModelError
from pdx.models import identify
from pdx.synth import GGUF_TYPES, SHAPES, get_shape, write_gguf
from pdx.synth.gguf_writer import expected_file_bytes

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
    from pdx.models import content_hash

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
