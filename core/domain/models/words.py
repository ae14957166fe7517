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
        if "(guessed)" in self.file_type.lower():  # no file type in the GGUF: llama.cpp's "all F32 (guessed)"
            return "?"
        # builds before late 2023 wrote "mostly Q4_0" for a file whose bulk is Q4_0
        kept = [w for w in self.file_type.split(" - ")[0].split() if w.lower() != "mostly"]
        first = kept[0] if kept else "?"
        return "f32" if first.lower() == "all" else first.lower()


@functools.lru_cache(maxsize=1)
def facts() -> dict:
    return json.loads(FACTS_PATH.read_text())


def _count(value: str, unit: str) -> float:
    return float(value) * _SCALE[unit.upper()]


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
