"""A model as llama-bench names it: ``<architecture> <size> <file type>``.

llama.cpp prints its model type from the GGUF: ``llama 7B Q4_0``,
``qwen3moe 30B.A3B Q4_K - Medium``, ``gpt-oss 120B MXFP4 MoE``, ``llama 8x7B
Q4_0`` (Mixtral), ``llama4 17Bx16E (Scout) Q4_K - Medium``, ``deepseek2 16B
Q4_K - Medium``. The words say more than the file-size and parameter columns:
whether the model routes to experts, and often how many parameters one token
uses (``A3B``: 3 billion active). A MoE read as dense is judged against a
ceiling many times too low (a qwen3next 80B.A3B once showed 537%), so a model
whose words say "experts" but not how many are active is refused a decode
ceiling rather than given a wrong one.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

_SCALE = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
_NUM = r"(\d+(?:\.\d+)?)"
# 30B.A3B, 235B.A22B, 80B.A3B: total and active; A13B: active only
_TOTAL_ACTIVE = re.compile(rf"^(?:{_NUM}([KMBT]))?\.?A{_NUM}([KMBT])$", re.I)
_EXPERTS_X_SIZE = re.compile(rf"^(\d+)x{_NUM}([KMBT])$", re.I)  # 8x7B: experts x each expert model's size
_ACTIVE_X_EXPERTS = re.compile(rf"^{_NUM}([KMBT])x(\d+)E$", re.I)  # 17Bx16E: active x experts (Llama 4)
_SIZE = re.compile(rf"^{_NUM}([KMBT])$", re.I)
# A file type where the size label belongs: llama.cpp prints none for a model type it has no size name for
# ("deepseek4 IQ2_XXS - 2.0625 bpw"), so the second word is already the file type.
_FILE_TYPE_WORD = re.compile(r"^(?:[IT]?Q\d\w*|B?F\d+|MXFP4|NVFP4|all)$", re.I)
FACTS_PATH = Path(__file__).with_name("moe_names.json")
TOLERANCE = 0.1  # a cited model's total against the file's count (quantisation leaves the count alone)


@dataclass(frozen=True)
class ModelWords:
    architecture: str
    size: str  # the size label as printed ("30B.A3B", "8x7B", "?B"); "" where none is printed
    file_type: str  # "Q4_K - Medium", "MXFP4 MoE", "F16"
    moe: bool  # the words say the model routes to experts
    active_params: float | None = None  # parameters one token uses, where the words (or a cited fact) say
    n_experts: int | None = None
    experts_used: int | None = None
    basis: str | None = None  # how the active count was read

    @property
    def weight_type(self) -> str:
        """The bulk weight type, as :func:`pdx.domain.ceilings.compute_dtype` reads it ("q4_k", "mxfp4", "f16")."""
        if _guessed(self.file_type):  # no file type in the GGUF: llama.cpp counted tensors ("all F32 (guessed)")
            return "?"
        return _type_words(self.file_type)[0].lower()

    @property
    def quant(self) -> str:
        """The file type as people write it: "Q4_K - Medium" is Q4_K_M, "IQ2_XS - 2.3125 bpw" IQ2_XS, 2023's
        "mostly Q8_0" Q8_0, "MXFP4 MoE" MXFP4; a type llama.cpp guessed says so."""
        first, variant = _type_words(self.file_type)
        written = f"{first}_{_VARIANTS[variant]}" if variant in _VARIANTS else first
        return f"{written} (guessed)" if _guessed(self.file_type) else written


# llama.cpp's file type names (llama_model_ftype_name): "<type> - <variant>" for the k-quant mixes
_VARIANTS = {"small": "S", "medium": "M", "large": "L"}


def _guessed(file_type: str) -> bool:
    """llama.cpp found no file type in the GGUF and guessed one from its most common tensor type, which
    counts tensors, not bytes (a quantised file's many small F32 norms make it "all F32 (guessed)")."""
    return "(guessed)" in file_type.lower()


def _type_words(file_type: str) -> tuple[str, str]:
    """(type, variant) of a file type: ("Q4_K", "medium"); builds before late 2023 said "mostly Q4_0" for a
    file whose bulk is Q4_0, and "all F32"."""
    head, _, variant = file_type.replace("(guessed)", "").partition(" - ")
    words = [w for w in head.split() if w.lower() not in ("mostly", "all")] or ["?"]
    return words[0], variant.split()[0].lower() if variant.strip() else ""


@functools.lru_cache(maxsize=1)
def facts() -> dict:
    return json.loads(FACTS_PATH.read_text())


def _count(value: str, unit: str) -> float:
    return float(value) * _SCALE[unit.upper()]


def quant_label(model: dict) -> str:
    """A model's weight type to show: as its tool printed it where it did (llama-bench's model type, read by
    :attr:`ModelWords.quant`), else the stored ``dtype``. A display only: the stored field, part of an
    imported run's content id, stays as an older pdx wrote it, so a re-import finds the same run."""
    written = (model.get("extra") or {}).get("model_type")
    words = parse(written) if isinstance(written, str) else None
    return words.quant if words and words.quant != "?" else str(model.get("dtype") or "?")


def parse(text: str, n_params: float | None = None) -> ModelWords | None:
    """The words of a llama-bench model type, or None for text not in that form; ``n_params`` (the
    file's count) must agree with a cited model's total for its name to mean that model."""
    words = text.split()
    if len(words) < 2:
        return None
    arch, size, rest = words[0].lower(), words[1], " ".join(words[2:])
    if _FILE_TYPE_WORD.match(size):
        size, rest = "", " ".join(words[1:])
    rest = re.sub(r"^\(.*?\)\s*", "", rest)  # "(Scout)" after Llama 4's size
    known = facts()
    moe = arch in known["moe_architectures"] or rest.upper().endswith(" MOE") or rest.upper() == "MOE"
    parsed = ModelWords(arch, size, rest, moe)
    if m := _TOTAL_ACTIVE.match(size):
        return _replace(parsed, moe=True, active_params=_count(m[3], m[4]), basis=f"{size}: active parameters in the "
                        f"name")
    if m := _ACTIVE_X_EXPERTS.match(size):
        return _replace(parsed, moe=True, active_params=_count(m[1], m[2]), n_experts=int(m[3]),
                        basis=f"{size}: active parameters x experts in the name")
    if m := _EXPERTS_X_SIZE.match(size):
        used = known["experts_used_by_architecture"].get(arch)
        return _replace(parsed, moe=True, n_experts=int(m[1]), experts_used=used and used["used"],
                        basis=used and f"{size}: {m[1]} experts; {used['used']} per token ({used['source']})")
    cited = known["active_by_name"].get(f"{arch} {size}".lower())
    if cited and _SIZE.match(size) and n_params and abs(n_params - cited["total"]) <= TOLERANCE * cited["total"]:
        return _replace(parsed, moe=True, active_params=cited["active"], basis=f"{arch} {size}: {cited['source']}")
    if moe and n_params and not _SIZE.match(size):  # "qwen3next ?B": the architecture's model of this total
        for name, fact in known["active_by_name"].items():
            if name.split()[0] == arch and abs(n_params - fact["total"]) <= TOLERANCE * fact["total"]:
                return _replace(parsed, active_params=fact["active"],
                                basis=f"{arch} with {n_params / 1e9:.4g}B parameters: {fact['source']}")
    return parsed


def _replace(words: ModelWords, **changes) -> ModelWords:
    from dataclasses import replace

    return replace(words, **changes)
