"""Gemma 3 (text): GGUF ``gemma3`` and Hugging Face ``Gemma3ForCausalLM`` (``gemma3_text``).

Beyond llama's weights a layer has RMS norms over each head's queries and keys, and norms after
the attention and after the feed-forward as well as before them; embeddings are tied and scaled by
sqrt(n_embd) in the engines, and all but every ``sliding_pattern``-th layer attend to a window
with a rotary base of their own. Gemma's HF norms scale by 1 + w, so their identity is zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdx.domain.synth.families.base import Family, Roles, attention, layer_types, named

if TYPE_CHECKING:
    from pdx.domain.synth.shapes import Shape

# The rotary base of the sliding-window layers (Gemma 3's rope_local_base_freq); rope_theta is the global layers'.
LOCAL_ROPE_THETA = 10_000.0
ACTIVATION = "gelu_pytorch_tanh"

GGUF_NAMES = {"embed": "token_embd.weight", "attn_norm": "attn_norm.weight", "q": "attn_q.weight",
              "k": "attn_k.weight", "v": "attn_v.weight", "o": "attn_output.weight",
              "q_norm": "attn_q_norm.weight", "k_norm": "attn_k_norm.weight",
              "attn_post_norm": "post_attention_norm.weight", "ffn_norm": "ffn_norm.weight",
              "gate": "ffn_gate.weight", "up": "ffn_up.weight", "down": "ffn_down.weight",
              "ffn_post_norm": "post_ffw_norm.weight", "norm": "output_norm.weight", "output": "output.weight"}
HF_NAMES = {"embed": "model.embed_tokens.weight", "attn_norm": "input_layernorm.weight",
            "q": "self_attn.q_proj.weight", "k": "self_attn.k_proj.weight", "v": "self_attn.v_proj.weight",
            "o": "self_attn.o_proj.weight", "q_norm": "self_attn.q_norm.weight", "k_norm": "self_attn.k_norm.weight",
            "attn_post_norm": "post_attention_layernorm.weight", "ffn_norm": "pre_feedforward_layernorm.weight",
            "gate": "mlp.gate_proj.weight", "up": "mlp.up_proj.weight", "down": "mlp.down_proj.weight",
            "ffn_post_norm": "post_feedforward_layernorm.weight", "norm": "model.norm.weight",
            "output": "lm_head.weight"}


def layer(shape: "Shape") -> Roles:
    d, hd, ff, att = shape.n_embd, shape.head_dim, shape.n_ff, attention(shape)
    return (("attn_norm", (d,)), *((r, att[r]) for r in ("q", "k", "v", "o")), ("q_norm", (hd,)), ("k_norm", (hd,)),
            ("attn_post_norm", (d,)), ("ffn_norm", (d,)), ("gate", (ff, d)), ("up", (ff, d)), ("down", (d, ff)),
            ("ffn_post_norm", (d,)))


def gguf_keys(writer, shape: "Shape") -> None:
    if shape.sliding_window:
        writer.add_rope_freq_base_swa(LOCAL_ROPE_THETA)


def hf_config(shape: "Shape") -> dict:
    # sliding_window_pattern for mlx-lm, which reads no layer_types; vLLM and transformers read layer_types.
    return {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_act": ACTIVATION,
            "hidden_activation": ACTIVATION, "query_pre_attn_scalar": shape.head_dim,
            "sliding_window": shape.sliding_window or None, "sliding_window_pattern": shape.sliding_pattern or 1,
            "layer_types": layer_types(shape), "rope_local_base_freq": LOCAL_ROPE_THETA,
            "final_logit_softcapping": None, "attn_logit_softcapping": None}


FAMILY = Family(name="gemma3", layer=layer, gguf_arch="gemma3", gguf_names=GGUF_NAMES, gguf_keys=gguf_keys,
                hf_config=hf_config, hf_tensors=lambda shape: named(HF_NAMES, shape), experts=False, rms_eps=1e-6,
                hf_norm_identity=0.0)
