"""gpt-oss: GGUF ``gpt-oss`` (llama.cpp's OpenAI MoE) and Hugging Face ``GptOssForCausalLM`` (``gpt_oss``).

Every layer routes to experts, with biases on the attention projections, the router and each
expert's projections, and one attention-sink logit per head; even layers attend to a window.
The rotary embedding is YaRN-stretched from a 4096-token original to the shape's context.

Hugging Face stores each layer's experts fused and input-major: ``gate_up_proj`` (experts, n_embd,
2 x ff, gate and up interleaved) and ``down_proj`` (experts, ff, n_embd), which vLLM and
transformers load. mlx-lm reads that form only as MXFP4 blocks; unquantised or in its own
quantisation it wants the experts split, output-major (``experts.gate_proj.weight`` ...), the
layout its converter writes: :data:`MLX_NAMES`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdx.domain.synth.families.base import Family, Roles, attention, hf_name, layer_types, named

if TYPE_CHECKING:
    from pdx.domain.synth.shapes import Shape

ORIGINAL_CONTEXT = 4096  # trained at, before YaRN stretched it (32x, to gpt-oss's 131072)
SWIGLU_LIMIT = 7.0  # the clamp of its SwiGLU (swiglu-oai in llama.cpp)

GGUF_NAMES = {"embed": "token_embd.weight", "attn_norm": "attn_norm.weight",
              "q": "attn_q.weight", "q_bias": "attn_q.bias", "k": "attn_k.weight", "k_bias": "attn_k.bias",
              "v": "attn_v.weight", "v_bias": "attn_v.bias", "o": "attn_output.weight", "o_bias": "attn_output.bias",
              "sinks": "attn_sinks.weight", "ffn_norm": "post_attention_norm.weight",
              "gate_inp": "ffn_gate_inp.weight", "gate_inp_bias": "ffn_gate_inp.bias",
              "gate_exps": "ffn_gate_exps.weight", "gate_exps_bias": "ffn_gate_exps.bias",
              "up_exps": "ffn_up_exps.weight", "up_exps_bias": "ffn_up_exps.bias",
              "down_exps": "ffn_down_exps.weight", "down_exps_bias": "ffn_down_exps.bias",
              "norm": "output_norm.weight", "output": "output.weight"}
_HF_COMMON = {"embed": "model.embed_tokens.weight", "attn_norm": "input_layernorm.weight",
              "q": "self_attn.q_proj.weight", "q_bias": "self_attn.q_proj.bias",
              "k": "self_attn.k_proj.weight", "k_bias": "self_attn.k_proj.bias",
              "v": "self_attn.v_proj.weight", "v_bias": "self_attn.v_proj.bias",
              "o": "self_attn.o_proj.weight", "o_bias": "self_attn.o_proj.bias", "sinks": "self_attn.sinks",
              "ffn_norm": "post_attention_layernorm.weight", "gate_inp": "mlp.router.weight",
              "gate_inp_bias": "mlp.router.bias", "norm": "model.norm.weight", "output": "lm_head.weight"}
# The fused experts: gate carries up (interleaved), so up has no tensor of its own.
HF_EXPERT_NAMES = {"gate_exps": "mlp.experts.gate_up_proj", "gate_exps_bias": "mlp.experts.gate_up_proj_bias",
                   "down_exps": "mlp.experts.down_proj", "down_exps_bias": "mlp.experts.down_proj_bias"}
MLX_NAMES = _HF_COMMON | {"gate_exps": "mlp.experts.gate_proj.weight", "gate_exps_bias": "mlp.experts.gate_proj.bias",
                          "up_exps": "mlp.experts.up_proj.weight", "up_exps_bias": "mlp.experts.up_proj.bias",
                          "down_exps": "mlp.experts.down_proj.weight",
                          "down_exps_bias": "mlp.experts.down_proj.bias"}


def yarn(shape: "Shape") -> dict:
    return {"rope_type": "yarn", "factor": max(1.0, shape.n_ctx / ORIGINAL_CONTEXT),
            "original_max_position_embeddings": ORIGINAL_CONTEXT, "beta_fast": 32.0, "beta_slow": 1.0,
            "truncate": False}


def layer(shape: "Shape") -> Roles:
    d, att, e, eff = shape.n_embd, attention(shape), shape.n_experts, shape.expert_ff
    return (("attn_norm", (d,)),
            ("q", att["q"]), ("q_bias", att["q"][:1]), ("k", att["k"]), ("k_bias", att["k"][:1]),
            ("v", att["v"]), ("v_bias", att["v"][:1]), ("o", att["o"]), ("o_bias", (d,)), ("sinks", (shape.n_heads,)),
            ("ffn_norm", (d,)), ("gate_inp", (e, d)), ("gate_inp_bias", (e,)),
            ("gate_exps", (e, eff, d)), ("gate_exps_bias", (e, eff)), ("up_exps", (e, eff, d)),
            ("up_exps_bias", (e, eff)), ("down_exps", (e, d, eff)), ("down_exps_bias", (e, d)))


def hf_tensors(shape: "Shape") -> list[tuple[str, tuple[int, ...], str]]:
    out = []
    for role, layer_, dims in shape.tensors():
        if role in ("up_exps", "up_exps_bias"):
            continue  # inside gate_up_proj
        if role == "gate_exps":  # input-major, up's columns interleaved with gate's: (experts, n_embd, 2 x ff)
            dims = (dims[0], dims[2], 2 * dims[1])
        elif role == "gate_exps_bias":
            dims = (dims[0], 2 * dims[1])
        elif role == "down_exps":
            dims = (dims[0], dims[2], dims[1])
        out.append((hf_name(HF_EXPERT_NAMES if role in HF_EXPERT_NAMES else _HF_COMMON, role, layer_), dims, role))
    return out


def gguf_keys(writer, shape: "Shape") -> None:
    import gguf

    writer.add_expert_feed_forward_length(shape.expert_ff)
    writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    writer.add_rope_scaling_factor(yarn(shape)["factor"])
    writer.add_rope_scaling_orig_ctx_len(ORIGINAL_CONTEXT)


def hf_config(shape: "Shape") -> dict:
    return {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "intermediate_size": shape.expert_ff,
            "attention_bias": True, "num_local_experts": shape.n_experts, "num_experts_per_tok": shape.n_experts_used,
            "experts_per_token": shape.n_experts_used, "sliding_window": shape.sliding_window or None,
            "layer_types": layer_types(shape), "rope_scaling": yarn(shape),
            "initial_context_length": ORIGINAL_CONTEXT, "swiglu_limit": SWIGLU_LIMIT,
            "router_aux_loss_coef": 0.0, "output_router_logits": False}


FAMILY = Family(name="gpt-oss", layer=layer, gguf_arch="gpt-oss", gguf_names=GGUF_NAMES, gguf_keys=gguf_keys,
                hf_config=hf_config, hf_tensors=hf_tensors, mlx_tensors=lambda shape: named(MLX_NAMES, shape),
                experts=True)
