"""A model named by its Hugging Face id or a repository name ("google/gemma-3-27b-it",
"mlx-community/Qwen3-30B-A3B-4bit", "Qwen/Qwen2.5-7B-Instruct-AWQ", "RedHatAI/Llama-3.1-8B-Instruct-FP8"),
as serving tools (vLLM, mlx_lm) report it: no file size, no parameter count. The name says the shape (pdx's
model catalog, :func:`pdx.domain.synth.shapes.find_shape`) and how its weights are stored; the bytes a token
reads follow from the shape's parameters at that width.

The width is the quantised one for every weight (AWQ and GPTQ keep embeddings and the head in 16 bits and
add scales, MLX's 4bit adds a scale per 64 weights): fewer bytes than the truth, so a memory ceiling from
it stays an upper bound. A name that says no quantisation is the checkpoint's own width: 16 bits, but for
a family published quantised (gpt-oss: MXFP4 experts)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pdx.domain.synth.shapes import Shape, find_shape

_S = r"(?:^|[\s\-_/.])"  # a quantisation word starts the name or follows a separator
_E = r"(?=$|[\s\-_.])"
# (pattern in the name, bits per weight, the data type the engine multiplies in); llama.cpp's types ("Q4_K -
# Medium", "IQ2_XS") at their digit, below their true width (scales left out), as every width here
_QUANT = (
    (rf"{_S}(?:nvfp4|mxfp4|fp4){_E}", 4, "fp4"),
    (rf"{_S}(?:fp8|f8|w8a8|fp8-dynamic){_E}", 8, "fp8"),
    (rf"{_S}(?:int8|w8a8-int8|8bit){_E}", 8, "int8"),
    (rf"{_S}(?:awq|gptq|int4|w4a16|4bit|bnb-4bit){_E}", 4, "fp16"),
    (rf"{_S}(?:3bit){_E}", 3, "fp16"),
    (rf"{_S}(?:5bit){_E}", 5, "fp16"),
    (rf"{_S}(?:6bit){_E}", 6, "fp16"),
    (rf"{_S}(?:2bit){_E}", 2, "fp16"),
    (rf"{_S}i?q([1-8])(?:_[a-z0-9]+)*{_E}", None, "int8"),  # llama.cpp's quantised types: Q4_K_M, IQ4_XS, Q8_0
    (rf"{_S}(?:bf16|f16|fp16){_E}", 16, "fp16"),
    (rf"{_S}(?:fp32|f32){_E}", 32, "fp32"),
)
# Families whose published checkpoint is itself quantised: the bits of their bulk weights.
_PUBLISHED = {"gpt-oss": (4, "fp4", "gpt-oss ships its MoE weights in MXFP4, "
                          "https://huggingface.co/openai/gpt-oss-120b")}


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
        if found := re.search(pattern, lower):
            bits = bits or int(found[1])
            return HubModel(shape, bits, dtype, f"{bits}-bit weights: the name says {found[0].strip(' -_/.')}")
    published = _PUBLISHED.get(shape.architecture)
    if published:
        return HubModel(shape, published[0], published[1], published[2])
    return HubModel(shape, 16, "bf16", "16-bit weights: the name says no quantisation (the checkpoint's bf16)")


_TOTAL_ACTIVE = re.compile(r"(?:^|[\s\-_/.])(\d+(?:\.\d+)?)b[-_.]a(\d+(?:\.\d+)?)b(?=$|[\s\-_.])")
_TOTAL = re.compile(r"(?:^|[\s\-_/.])(\d+(?:\.\d+)?)b(?=$|[\s\-_.])")


def sized(name: str) -> tuple[float, float | None, int, str, str] | None:
    """(total parameters, active ones or None, bits per weight, the data type the engine multiplies in, how
    it was read) from a name that gives its size ("...-80B-A3B-...-FP8"), for a model of no catalog shape;
    None where the name gives no size."""
    lower = name.lower()
    both, total = _TOTAL_ACTIVE.search(lower), _TOTAL.search(lower)
    size = both or total  # without both, the total
    if size is None:
        return None
    bits, dtype, said = 16, "bf16", "16-bit weights: the name says no quantisation"
    for pattern, width, kind in _QUANT:
        if found := re.search(pattern, lower):
            bits, dtype = width or int(found[1]), kind
            said = f"{bits}-bit weights: the name says {found[0].strip(' -_/.')}"
            break
    if both:
        named = f"{both[0].strip(' -_/.')} in the name: total and active; {said}"
        return float(both[1]) * 1e9, float(both[2]) * 1e9, bits, dtype, named
    return float(size[1]) * 1e9, None, bits, dtype, f"{size[0].strip(' -_/.')} in the name; {said}"
