"""What every family module fills in: the roles of a layer's weights, how a role is filled, and the
:class:`Family` record that names the roles in each file format.

A role is a name of pdx's own ("q", "ffn_norm", "gate_exps"...); :meth:`Shape.tensors` lists them
with their dims in the family's order, so parameter counts come from the same list the writers write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

if TYPE_CHECKING:
    from pdx.domain.synth.shapes import Shape

Dims = tuple[int, ...]
Roles = tuple[tuple[str, Dims], ...]

NORM_ROLES = frozenset({"attn_norm", "ffn_norm", "norm", "q_norm", "k_norm", "attn_post_norm", "ffn_post_norm"})
# Added, not multiplied: zeros leave activations as the matrices made them (gpt-oss's sinks are
# logits added to each head's softmax; zero is a sink of weight one token).
ZERO_ROLES = frozenset({"q_bias", "k_bias", "v_bias", "o_bias", "sinks", "gate_inp_bias", "gate_exps_bias",
                        "up_exps_bias", "down_exps_bias"})
# Weights of the routed experts, stacked (experts, ...): a token reads n_experts_used of n_experts of them.
EXPERT_ROLES = frozenset({"gate_exps", "up_exps", "down_exps", "gate_exps_bias", "up_exps_bias", "down_exps_bias"})
# Kept F32 in GGUF whatever the weight type, as llama.cpp's converter writes them and llama-quantize leaves them.
GGUF_F32_ROLES = frozenset({"gate_inp"}) | ZERO_ROLES


@dataclass(frozen=True)
class Family:
    """How pdx writes one model family."""

    name: str  # the catalog's ``architecture``
    layer: Callable[["Shape"], Roles]  # one layer's weights, in file order
    gguf_arch: str  # general.architecture: the llama.cpp model it loads as
    gguf_names: Mapping[str, str]  # role -> tensor name ("attn_q.weight"), under "blk.N." in a layer
    hf_config: Callable[["Shape"], dict]  # config.json keys of its own, over the common ones
    hf_tensors: Callable[["Shape"], list[tuple[str, Dims, str]]]  # (name, dims, role) in file order
    mlx_tensors: Callable[["Shape"], list[tuple[str, Dims, str]]] | None = None  # where mlx-lm's layout differs
    gguf_keys: Callable[[object, "Shape"], None] = lambda writer, shape: None  # GGUF metadata of its own
    experts: bool | None = None  # True: always routed experts; False: never; None: either
    rms_eps: float = 1e-5
    hf_norm_identity: float = 1.0  # the norm weight that leaves activations unchanged in the HF layout

    def fill(self, role: str, layout: str) -> float | None:
        """The constant a role's tensor is filled with in ``layout`` ("gguf", "hf"), or None for random."""
        if role in ZERO_ROLES:
            return 0.0
        if role in NORM_ROLES:
            # llama.cpp's converters fold Gemma's 1 + w into the GGUF weight: one is the identity there.
            return 1.0 if layout == "gguf" else self.hf_norm_identity
        return None


def gguf_name(names: Mapping[str, str], role: str, layer: int | None) -> str:
    return names[role] if layer is None else f"blk.{layer}.{names[role]}"


def hf_name(names: Mapping[str, str], role: str, layer: int | None) -> str:
    return names[role] if layer is None else f"model.layers.{layer}.{names[role]}"


def named(names: Mapping[str, str], shape: "Shape") -> list[tuple[str, Dims, str]]:
    """Every tensor of ``shape`` under ``names``, one for one (the layouts that rename without reshaping)."""
    return [(hf_name(names, role, layer), dims, role) for role, layer, dims in shape.tensors()]


def attention(shape: "Shape") -> dict[str, Dims]:
    """The dims of the attention weights every family has (out, in), as GGUF and torch both order them."""
    d, q, kv = shape.n_embd, shape.n_heads * shape.head_dim, shape.n_kv_heads * shape.head_dim
    return {"q": (q, d), "k": (kv, d), "v": (kv, d), "o": (d, q)}


def layer_types(shape: "Shape") -> list[str]:
    """Hugging Face's per-layer attention kinds, from :meth:`Shape.sliding`."""
    return ["sliding_attention" if shape.sliding(i) else "full_attention" for i in range(shape.n_layers)]
