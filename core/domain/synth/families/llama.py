"""Llama, and with experts Mixtral (llama with a router and stacked experts in GGUF, MixtralForCausalLM
in Hugging Face layout). Every shape of a family pdx does not write in its own architecture is written so."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdx.domain.synth.families.base import Family, Roles, attention, hf_name

if TYPE_CHECKING:
    from pdx.domain.synth.shapes import Shape

GGUF_NAMES = {"embed": "token_embd.weight", "attn_norm": "attn_norm.weight", "q": "attn_q.weight",
              "k": "attn_k.weight", "v": "attn_v.weight", "o": "attn_output.weight", "ffn_norm": "ffn_norm.weight",
              "gate": "ffn_gate.weight", "up": "ffn_up.weight", "down": "ffn_down.weight",
              "norm": "output_norm.weight", "output": "output.weight", "gate_inp": "ffn_gate_inp.weight",
              "gate_exps": "ffn_gate_exps.weight", "up_exps": "ffn_up_exps.weight",
              "down_exps": "ffn_down_exps.weight"}
HF_NAMES = {"embed": "model.embed_tokens.weight", "attn_norm": "input_layernorm.weight",
            "q": "self_attn.q_proj.weight", "k": "self_attn.k_proj.weight", "v": "self_attn.v_proj.weight",
            "o": "self_attn.o_proj.weight", "ffn_norm": "post_attention_layernorm.weight",
            "gate": "mlp.gate_proj.weight", "up": "mlp.up_proj.weight", "down": "mlp.down_proj.weight",
            "norm": "model.norm.weight", "output": "lm_head.weight",
            "gate_inp": "block_sparse_moe.gate.weight"}
# Mixtral's name of each expert's projection (w1 gate, w3 up, w2 down): one tensor per expert.
HF_EXPERT_NAMES = {"gate_exps": "w1", "up_exps": "w3", "down_exps": "w2"}


def layer(shape: "Shape") -> Roles:
    d, att = shape.n_embd, attention(shape)
    if shape.is_moe:
        e, eff = shape.n_experts, shape.expert_ff
        ffn = (("gate_inp", (e, d)), ("gate_exps", (e, eff, d)), ("up_exps", (e, eff, d)), ("down_exps", (e, d, eff)))
    else:
        ffn = (("gate", (shape.n_ff, d)), ("up", (shape.n_ff, d)), ("down", (d, shape.n_ff)))
    return (("attn_norm", (d,)), *((r, att[r]) for r in ("q", "k", "v", "o")), ("ffn_norm", (d,)), *ffn)


def hf_tensors(shape: "Shape") -> list[tuple[str, tuple[int, ...], str]]:
    out = []
    for role, layer_, dims in shape.tensors():
        if role in HF_EXPERT_NAMES:
            out += [(f"model.layers.{layer_}.block_sparse_moe.experts.{j}.{HF_EXPERT_NAMES[role]}.weight", dims[1:],
                     role) for j in range(dims[0])]
        else:
            out.append((hf_name(HF_NAMES, role, layer_), dims, role))
    return out


def hf_config(shape: "Shape") -> dict:
    """Mixtral's keys, for a shape with experts (vLLM and mlx-lm both know Mixtral); llama's are the common ones."""
    if not shape.is_moe:
        return {}
    return {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "intermediate_size": shape.expert_ff,
            "num_local_experts": shape.n_experts, "num_experts_per_tok": shape.n_experts_used,
            "sliding_window": None, "router_aux_loss_coef": 0.0, "output_router_logits": False}


FAMILY = Family(name="llama", layer=layer, gguf_arch="llama", gguf_names=GGUF_NAMES, hf_config=hf_config,
                hf_tensors=hf_tensors)
