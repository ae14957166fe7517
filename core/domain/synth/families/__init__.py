"""The model families pdx writes, one module each: a layer's weights, their names in GGUF and in
Hugging Face layout, and each format's metadata of the family's own (:mod:`.base` says what a
family module fills in). A catalog architecture with no module of its own (qwen3, qwen3moe) is
written as llama, or Mixtral with experts: the same bytes to read per token, not its extra norms.
"""

from __future__ import annotations

from pdx.domain.synth.families import gemma3, gpt_oss, llama
from pdx.domain.synth.families.base import EXPERT_ROLES, GGUF_F32_ROLES, Family

FAMILIES: dict[str, Family] = {f.name: f for f in (llama.FAMILY, gemma3.FAMILY, gpt_oss.FAMILY)}


def family_of(architecture: str) -> Family:
    return FAMILIES.get(architecture, llama.FAMILY)


__all__ = ["FAMILIES", "Family", "family_of", "EXPERT_ROLES", "GGUF_F32_ROLES"]
