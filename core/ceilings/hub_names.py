"""A model named by its Hugging Face id or a repository name ("google/gemma-3-27b-it",
"mlx-community/Qwen3-30B-A3B-4bit", "Qwen/Qwen2.5-7B-Instruct-AWQ", "RedHatAI/Llama-3.1-8B-Instruct-FP8"),
as serving tools (vLLM, mlx_lm) report it: no file size, no parameter count. The name says the shape (pdx's
model catalog, :func:`pdx.synth.shapes.find_shape`) and how its weights are stored; the bytes a token
reads follow from the shape's parameters at that width.

The width is the quantised one for every weight (AWQ and GPTQ keep embeddings and the head in 16 bits and
add scales, MLX's 4bit adds a scale per 64 weights): fewer bytes than the truth, so a memory ceiling from
it stays an upper bound. A name that says no quantisation is the checkpoint's own width: 16 bits, but for
a family published quantised (gpt-oss: MXFP4 experts)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pdx.synth.shapes import Shape, find_shape

# (pattern in the name, bits per weight, the data type the engine multiplies in)
_QUANT = (
    (r"(?:^|[-_/.])(?:nvfp4|mxfp4|fp4)(?:$|[-_.])", 4, "fp4"),
    (r"(?:^|[-_/.])(?:fp8|f8|w8a8(?:-fp8)?|fp8-dynamic)(?:$|[-_.])", 8, "fp8"),
    (r"(?:^|[-_/.])(?:int8|w8a8-int8|8bit|q8(?:_0)?)(?:$|[-_.])", 8, "int8"),
    (r"(?:^|[-_/.])(?:awq|gptq|int4|w4a16|4bit|q4(?:_k_m|_0)?|bnb-4bit)(?:$|[-_.])", 4, "fp16"),
    (r"(?:^|[-_/.])(?:3bit|q3(?:_k_m)?)(?:$|[-_.])", 3, "fp16"),
    (r"(?:^|[-_/.])(?:5bit|6bit)(?:$|[-_.])", 5, "fp16"),
    (r"(?:^|[-_/.])(?:2bit)(?:$|[-_.])", 2, "fp16"),
    (r"(?:^|[-_/.])(?:fp32|f32)(?:$|[-_.])", 32, "fp32"),
)
# Families whose published checkpoint is itself quantised: the bits of their bulk weights.
_PUBLISHED = {"gpt-oss": (4, "fp4", "gpt-oss ships its MoE weights in MXFP4, https://huggingface.co/openai/gpt-oss-120b")}


@dataclass(frozen=True)
class HubModel:
    shape: Shape
    bits: int
    dtype: str
    said: str  # how the width was read

    @property
    def file_bytes(self) -> int:
        return round(self.shape.n_params * self.bits / 8)


def read(name: str) -> HubModel | None:
    """The shape and width a hub name says, or None where it names no catalog shape."""
    shape = find_shape(name.replace("/", " "))
    if shape is None:
        return None
    lower = name.lower()
    for pattern, bits, dtype in _QUANT:
        if re.search(pattern, lower):
            return HubModel(shape, bits, dtype, f"{bits}-bit weights: the name says {re.search(pattern, lower)[0].strip('-_/.')}")
    published = _PUBLISHED.get(shape.architecture)
    if published:
        return HubModel(shape, published[0], published[1], published[2])
    return HubModel(shape, 16, "bf16", "16-bit weights: the name says no quantisation (the checkpoint's bf16)")
