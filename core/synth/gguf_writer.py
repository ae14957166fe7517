"""Write a random-weight llama-architecture GGUF file, dense or with experts
(as Mixtral GGUFs are: llama with ``ffn_gate_inp`` and stacked ``ffn_*_exps``).

Tensors are written one at a time, so a 7B model needs memory for its
largest tensor only. Quantised blocks are written directly (random quants
under a small finite scale) rather than quantised from floats: the bytes
llama.cpp reads, and so its speed, are the same, and a 4 GB file takes
seconds instead of minutes.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from pdx.errors import ModelError
from pdx.paths import cache_dir
from pdx.synth import vocabulary
from pdx.synth.shapes import Shape
from pdx.synth.weights import random_f16

# name -> (GGML type name, llama file-type name)
GGUF_TYPES = {
    "f32": ("F32", "ALL_F32"),
    "f16": ("F16", "MOSTLY_F16"),
    "q8_0": ("Q8_0", "MOSTLY_Q8_0"),
    "q4_0": ("Q4_0", "MOSTLY_Q4_0"),
}
# A scale small enough that activations stay finite through any number of layers.
_BLOCK_SCALE = {"Q8_0": 0.0005, "Q4_0": 0.002}


def default_model_path(shape: str, dtype: str, seed: int = 0) -> Path:
    suffix = "" if seed == 0 else f"-s{seed}"
    return cache_dir("models") / f"synth-{shape}-{dtype.lower()}{suffix}.gguf"


_NAMES = {"embed": "token_embd", "attn_norm": "attn_norm", "q": "attn_q", "k": "attn_k", "v": "attn_v",
          "o": "attn_output", "ffn_norm": "ffn_norm", "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down",
          "norm": "output_norm", "output": "output", "gate_inp": "ffn_gate_inp", "gate_exps": "ffn_gate_exps",
          "up_exps": "ffn_up_exps", "down_exps": "ffn_down_exps"}
_F32_ROLES = ("gate_inp",)  # the router stays F32, as llama-quantize leaves it


def _tensors(shape: Shape) -> list[tuple[str, tuple[int, ...], bool]]:
    """(name, numpy shape, kept F32) in llama.cpp's naming; numpy shape is (rows, cols), or
    (experts, rows, cols) for stacked experts."""
    return [(f"blk.{layer}.{_NAMES[role]}.weight" if layer is not None else f"{_NAMES[role]}.weight", dims,
             len(dims) == 1 or role in _F32_ROLES)
            for role, layer, dims in shape.tensors()]


def _random_blocks(rng: np.random.Generator, ggml_type: str, count: int) -> np.ndarray:
    import gguf

    qtype = gguf.GGMLQuantizationType[ggml_type]
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = np.frombuffer(rng.bytes(count // block_size * type_size), dtype=np.uint8).copy()
    blocks = blocks.reshape(-1, type_size)
    blocks[:, 0:2] = np.frombuffer(np.float16(_BLOCK_SCALE[ggml_type]).tobytes(), dtype=np.uint8)
    return blocks.reshape(-1)


def _tensor_data(rng: np.random.Generator, ggml_type: str, dims: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(dims))
    if len(dims) == 1:  # norms stay F32, as llama.cpp expects (ones: activations keep their scale)
        return np.ones(count, dtype=np.float32)
    if ggml_type == "F16":
        return random_f16(rng, count)
    if ggml_type == "F32":
        return random_f16(rng, count).astype(np.float32)
    return _random_blocks(rng, ggml_type, count)


def _prepared_writer(shape: Shape, dtype: str, seed: int, path: Path):
    """A writer with every key and tensor declared, ready for its header."""
    import gguf

    try:
        ggml_type, file_type = GGUF_TYPES[dtype.lower()]
    except KeyError:
        # K-quants, IQ types and MXFP4 are llama.cpp's own layouts: its quantiser writes them (write_gguf
        # hands them to it), and only it knows their size.
        raise ModelError(f"pdx writes no GGUF type {dtype!r} itself", f"choose one of: {', '.join(GGUF_TYPES)}") from None
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name(f"pdx-synth-{shape.name}-{dtype.lower()}")
    writer.add_file_type(gguf.LlamaFileType[file_type].value)
    writer.add_context_length(shape.n_ctx)
    writer.add_embedding_length(shape.n_embd)
    writer.add_block_count(shape.n_layers)
    writer.add_feed_forward_length(shape.expert_ff if shape.is_moe else shape.n_ff)  # llama.cpp sizes experts by it
    writer.add_head_count(shape.n_heads)
    writer.add_head_count_kv(shape.n_kv_heads)
    writer.add_rope_dimension_count(shape.head_dim)
    if shape.head_dim * shape.n_heads != shape.n_embd:  # Qwen3, Gemma, gpt-oss: heads wider or narrower
        writer.add_key_length(shape.head_dim)
        writer.add_value_length(shape.head_dim)
    writer.add_rope_freq_base(shape.rope_theta)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(shape.n_vocab)
    if shape.is_moe:
        writer.add_expert_count(shape.n_experts)
        writer.add_expert_used_count(shape.n_experts_used)
    writer.add_tokenizer_model("llama")  # SentencePiece, over pdx's one synthetic vocabulary (the HF one too)
    writer.add_token_list(vocabulary.tokens(shape.n_vocab))
    writer.add_token_scores(vocabulary.scores(shape.n_vocab))
    writer.add_token_types(vocabulary.token_types(shape.n_vocab))
    writer.add_unk_token_id(vocabulary.UNK_ID)
    writer.add_bos_token_id(vocabulary.BOS_ID)
    writer.add_eos_token_id(vocabulary.EOS_ID)
    writer.add_add_bos_token(False)
    writer.add_add_space_prefix(True)
    writer.add_string("pdx.synthetic.shape", shape.name)
    writer.add_uint32("pdx.synthetic.seed", seed)
    plan = []
    for name, dims, keep_f32 in _tensors(shape):
        tensor_type = "F32" if keep_f32 else ggml_type
        qtype = gguf.GGMLQuantizationType[tensor_type]
        block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
        nbytes = int(np.prod(dims)) // block_size * type_size
        writer.add_tensor_info(name, dims, np.dtype(np.float32), nbytes, raw_dtype=qtype)
        plan.append((tensor_type, dims, nbytes))
    return writer, plan


def write_gguf(shape: Shape, dtype: str, path: Path, seed: int = 0) -> Path:
    """Write ``shape`` with random weights of ``dtype`` to ``path``: f32, f16, q8_0 and q4_0 by pdx, any
    other type by a plugin's quantiser from pdx's f16 (:mod:`pdx.synth.quantizers`)."""
    if dtype.lower() not in GGUF_TYPES:
        from pdx.plugin_manager import quantizers
        from pdx.synth.quantizers import write_quantized

        return write_quantized(lambda f16: write_gguf(shape, "f16", f16, seed), dtype, path, tuple(GGUF_TYPES),
                               quantizers())
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    rng = np.random.default_rng(seed)
    writer, plan = _prepared_writer(shape, dtype, seed, tmp)
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for tensor_type, dims, _ in plan:
            writer.write_tensor_data(_tensor_data(rng, tensor_type, dims))
        writer.close()
        os.replace(tmp, path)
    except BaseException:
        writer.close()
        tmp.unlink(missing_ok=True)
        raise
    return path


def expected_file_bytes(shape: Shape, dtype: str) -> int:
    """The size ``write_gguf`` produces, found by writing only the header."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        writer, plan = _prepared_writer(shape, dtype, 0, Path(tmp) / "header.gguf")
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        writer.fout[0].flush()
        header = writer.fout[0].tell()
        writer.close()
    align = writer.data_alignment
    return writer.ggml_pad(header, align) + sum(writer.ggml_pad(nbytes, align) for _, _, nbytes in plan)


def ensure_gguf(shape: str, dtype: str, seed: int = 0) -> Path:
    """The cached synthetic GGUF of ``shape`` and ``dtype``, written on first use."""
    from pdx.synth.shapes import get_shape

    path = default_model_path(shape, dtype, seed)
    if not path.exists():
        write_gguf(get_shape(shape), dtype, path, seed)
    return path

