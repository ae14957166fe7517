"""Bytes per weight of llama.cpp's weight types: what a named shape costs at a type (``pdx ceiling --type``),
and what a file's size says of its parameter count where a table gives no count."""

from __future__ import annotations

from pdx.contract.errors import PdxError

# Weight types a --shape can be costed in: llama.cpp's block types (bytes per weight from gguf's
# own block table) and the float types. Mixes such as Q4_K_M vary by tensor: a file made by
# llama-quantize (-m FILE) has the exact bytes.
_FLOAT_BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0}


def weight_bytes_per_param(weight_type: str) -> float:
    """Bytes per weight of one weight type, e.g. q4_k: 144 bytes per 256 weights."""
    import gguf

    name = weight_type.lower()
    if name in _FLOAT_BYTES:
        return _FLOAT_BYTES[name]
    qtype = getattr(gguf.GGMLQuantizationType, name.upper(), None)
    if qtype is None or name in ("q8_1", "q8_k", "i8", "i16", "i32", "i64", "f64"):
        hint = "a per-tensor mix: give -m FILE (made by llama-quantize) or the type of its bulk, e.g. q4_k" \
            if name.endswith(("_m", "_s", "_l", "_xl")) else \
            "use f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, iq4_xs, mxfp4 or another llama.cpp block type"
        raise PdxError(f"--type {weight_type}: not a weight type a shape can be costed in", hint)
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    return size / block
