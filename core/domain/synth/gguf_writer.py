"""Write a random-weight GGUF file in its family's llama.cpp architecture (:mod:`pdx.domain.synth.families`):
llama, dense or with experts (as Mixtral GGUFs are: llama with ``ffn_gate_inp`` and stacked
``ffn_*_exps``), ``gemma3`` or ``gpt-oss``, with the sliding-window layers the shape has.

Tensors are written one at a time, so a 7B model needs memory for its
largest tensor only. Quantised blocks are written directly (random quants
under a small finite scale) rather than quantised from floats: the bytes
llama.cpp reads, and so its speed, are the same, and a 4 GB file takes
seconds instead of minutes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pdx.base import plugin_manager
from pdx.contract.errors import ModelError
from pdx.domain.models import identify
from pdx.base.paths import cache_dir
from pdx.domain.synth import vocabulary
from pdx.domain.synth.families import GGUF_F32_ROLES
from pdx.domain.synth.families.base import gguf_name
from pdx.domain.synth.quantizers import write_quantized
from pdx.domain.synth.shapes import Shape, get_shape
from pdx.domain.synth.weights import random_f16

# numpy is imported by the functions that make weights: finding a model already written needs none.
if TYPE_CHECKING:
    import numpy as np

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


def _tensors(shape: Shape) -> list[tuple[str, tuple[int, ...], bool, float | None]]:
    """(name, numpy shape, kept F32, constant fill or None) in llama.cpp's naming; numpy shape is
    (rows, cols), or (experts, rows, cols) for stacked experts."""
    family = shape.family
    return [(gguf_name(family.gguf_names, role, layer), dims, len(dims) == 1 or role in GGUF_F32_ROLES,
             family.fill(role, "gguf"))
            for role, layer, dims in shape.tensors()]


def _random_blocks(rng: np.random.Generator, ggml_type: str, count: int) -> np.ndarray:
    import numpy as np
    import gguf

    qtype = gguf.GGMLQuantizationType[ggml_type]
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = np.frombuffer(rng.bytes(count // block_size * type_size), dtype=np.uint8).copy()
    blocks = blocks.reshape(-1, type_size)
    blocks[:, 0:2] = np.frombuffer(np.float16(_BLOCK_SCALE[ggml_type]).tobytes(), dtype=np.uint8)
    return blocks.reshape(-1)


def _tensor_data(rng: np.random.Generator, ggml_type: str, dims: tuple[int, ...], fill: float | None) -> np.ndarray:
    import numpy as np

    count = int(np.prod(dims))
    if fill is not None:  # norms (ones: activations keep their scale), biases and sinks (zeros); all F32
        return np.full(count, fill, dtype=np.float32)
    if ggml_type == "F16":
        return random_f16(rng, count)
    if ggml_type == "F32":
        return random_f16(rng, count).astype(np.float32)
    return _random_blocks(rng, ggml_type, count)


def _prepared_writer(shape: Shape, dtype: str, seed: int, path: Path, named: str | None = None):
    """A writer with every key and tensor declared, ready for its header; ``named``: the type its name
    says, where a quantiser makes that type from this file (and keeps its name)."""
    import numpy as np
    import gguf

    try:
        ggml_type, file_type = GGUF_TYPES[dtype.lower()]
    except KeyError:
        # K-quants, IQ types and MXFP4 are llama.cpp's own layouts: its quantiser writes them (write_gguf
        # hands them to it), and only it knows their size.
        raise ModelError(f"pdx writes no GGUF type {dtype!r} "
                         f"itself", f"choose one of: {', '.join(GGUF_TYPES)}") from None
    family = shape.family
    writer = gguf.GGUFWriter(path, family.gguf_arch)
    writer.add_name(f"pdx-synth-{shape.name}-{(named or dtype).lower()}")
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
    writer.add_layer_norm_rms_eps(family.rms_eps)
    writer.add_vocab_size(shape.n_vocab)
    if shape.is_moe:
        writer.add_expert_count(shape.n_experts)
        writer.add_expert_used_count(shape.n_experts_used)
    if shape.n_sliding_layers:  # which layers slide, said per layer rather than left to llama.cpp's default
        writer.add_sliding_window(shape.sliding_window)
        writer.add_sliding_window_pattern([shape.sliding(i) for i in range(shape.n_layers)])
    family.gguf_keys(writer, shape)
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
    for name, dims, keep_f32, fill in _tensors(shape):
        tensor_type = "F32" if keep_f32 else ggml_type
        qtype = gguf.GGMLQuantizationType[tensor_type]
        block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
        nbytes = int(np.prod(dims)) // block_size * type_size
        writer.add_tensor_info(name, dims, np.dtype(np.float32), nbytes, raw_dtype=qtype)
        plan.append((tensor_type, dims, nbytes, fill))
    return writer, plan


def write_gguf(shape: Shape, dtype: str, path: Path, seed: int = 0, named: str | None = None) -> Path:
    """Write ``shape`` with random weights of ``dtype`` to ``path``: f32, f16, q8_0 and q4_0 by pdx, any
    other type by a plugin's quantiser from pdx's f16 (:mod:`pdx.domain.synth.quantizers`), that f16 named for
    the type it becomes (a quantiser keeps ``general.name``). ``named``: the type the name says."""
    import numpy as np

    if dtype.lower() not in GGUF_TYPES:
        return write_quantized(lambda f16: write_gguf(shape, "f16", f16, seed, named=dtype), dtype, path,
                               tuple(GGUF_TYPES), plugin_manager.quantizers())
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    rng = np.random.default_rng(seed)
    writer, plan = _prepared_writer(shape, dtype, seed, tmp, named)
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for tensor_type, dims, _, fill in plan:
            writer.write_tensor_data(_tensor_data(rng, tensor_type, dims, fill))
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
    return writer.ggml_pad(header, align) + sum(writer.ggml_pad(nbytes, align) for _, _, nbytes, _ in plan)


def ensure_gguf(shape: str, dtype: str, seed: int = 0) -> Path:
    """The cached synthetic GGUF of ``shape`` and ``dtype``, written on first use (again where an older
    pdx cached it in another architecture: Gemma 3 and gpt-oss shapes were once written as llama)."""
    path = default_model_path(shape, dtype, seed)
    chosen = get_shape(shape)
    if not path.exists() or _architecture(path) != chosen.family.gguf_arch:
        write_gguf(chosen, dtype, path, seed)
    return path


def _architecture(path: Path) -> str | None:
    try:
        return identify(path).architecture  # cached: the file is parsed once, not on every bench
    except ModelError:  # a damaged cache file is written again
        return None

