"""``pdx ceiling`` and ``pdx kv``: napkin calculators, no benchmark run."""

from __future__ import annotations

import functools

import click

from pdx.cli.base import Integer, Number, echo_json, json_option
from pdx.contract.numbers import MAX_TOKENS

_POSITIVE = Integer(min=1, max=MAX_TOKENS)


def model_options(func):
    """The ways to name a model, shared by both calculators."""
    options = [
        click.option("-m", "--model", "path", metavar="PATH", help="A GGUF file, a Hugging Face directory or its "
                     "config.json."),
        click.option("--shape", help="A named shape (see `pdx model shapes`)."),
        click.option("--type", "weight_type", default="f16", show_default=True,
                     help="Weight type of every matrix of --shape (with --model-bytes: the type the engine computes "
                          "from): f16, bf16, q8_0, q4_0, q4_k, q6_k, mxfp4..."),
        click.option("--n-layers", type=_POSITIVE, help="Layers."),
        click.option("--n-kv-heads", type=_POSITIVE, help="KV heads (grouped-query attention)."),
        click.option("--head-dim", type=_POSITIVE, help="Head dimension."),
        click.option("--n-heads", type=_POSITIVE, help="Attention heads (for attention FLOPs, or head dim with "
                     "--n-embd)."),
        click.option("--n-embd", type=_POSITIVE, help="Embedding width."),
        click.option("--kv-type", default="f16", show_default=True, help="KV-cache element type: f16, f32, q8_0, "
                     "q4_0..."),
    ]
    return functools.reduce(lambda f, option: option(f), reversed(options), func)


@click.command()
@click.option("--hardware", metavar="NAME",
              help="A catalog chip (see `pdx hw list`), e.g. 'm2 max', 'H100 SXM5'; 'probe': this machine's probe.")
@click.option("--bandwidth", metavar="RATE", help="Memory bandwidth, e.g. 400GB/s (overrides the chip's).")
@click.option("--flops", metavar="RATE", help="Peak FLOP/s, e.g. 27TFLOPS (overrides the chip's).")
@click.option("--dtype", help="Data type the engine computes in (fp16, bf16, fp32, int8, fp8). [default: from the "
              "model]")
@click.option("--model-bytes", metavar="SIZE", help="Napkin form: weight bytes read per token, e.g. 3.83GB.")
@click.option("--params", metavar="COUNT", help="Napkin form: parameters, e.g. 7B (without it, no compute bound).")
@click.option("--active-params", metavar="COUNT",
              help="Mixture-of-experts: parameters one token uses, e.g. 5.1B (with --params).")
@click.option("--experts", type=_POSITIVE, help="Mixture-of-experts: routed experts per layer (with --experts-used).")
@click.option("--experts-used", type=_POSITIVE, help="Mixture-of-experts: experts each token routes to.")
@model_options
@click.option("-p", "--n-prompt", default=512, show_default=True, type=_POSITIVE, help="Prompt tokens of the prefill.")
@click.option("-n", "--n-gen", default=1, show_default=True, type=_POSITIVE,
              help="Decode steps the decode ceiling averages over (as tgN: its KV reads grow step by step).")
@click.option("-d", "--depth", default=0, show_default=True, type=Integer(min=0, max=MAX_TOKENS), help="Tokens already "
              "in the KV cache.")
@click.option("-b", "--batch", default=1, show_default=True, type=_POSITIVE, help="Sequences at once.")
@click.option("--ubatch", default=512, show_default=True, type=_POSITIVE, help="Prompt tokens per forward step.")
@click.option("--accept-length", type=Number(min=1), metavar="L",
              help="Speculative decoding: mean tokens each pass of the target yields (its own included).")
@click.option("--draft-tokens", type=Number(min=0), metavar="K",
              help="Speculative decoding: tokens drafted per pass. [default: L - 1, every draft accepted]")
@click.option("--draft-model", metavar="FILE|SIZE",
              help="Speculative decoding: the draft model (a file, or its size, e.g. 0.5GB), read once per drafted "
                   "token. [default: none counted, as n-gram lookup]")
@click.option("--measured", type=Number(min=0, min_open=True), help="A measured decode rate (t/s): its fraction.")
@click.option("--measured-pp", type=Number(min=0, min_open=True), help="A measured prefill rate (t/s).")
@json_option
def ceiling(hardware, bandwidth, flops, dtype, model_bytes, params, active_params, experts, experts_used, kv_type,
            n_prompt, n_gen, depth, batch, ubatch, accept_length, draft_tokens, draft_model, measured, measured_pp,
            as_json, **model) -> None:
    """Decode and prefill ceilings, ridge point and knee batch for a model on hardware.

    --hardware probe judges by this machine's probe; a catalog chip that is this machine is
    judged by its cached probe too, and the lower ceiling binds."""
    from pdx.domain import ceilings
    from pdx.domain.ceilings import napkin
    from pdx.measure import ceiling_sources as sources
    from pdx.reports.display.napkin import print_ceiling_report

    spec = napkin.ModelSpec(model_bytes=model_bytes, params=params, active_params=active_params, experts=experts,
                            experts_used=experts_used, **model)
    figures, weight_dtype = napkin.model_figures(spec, kv_type)
    hw = sources.hardware_sources(hardware, bandwidth, flops, dtype or ceilings.compute_dtype(weight_dtype))
    drafts = napkin.speculation(accept_length, draft_tokens, draft_model)
    report = napkin.ceiling_report(hw, figures, n_prompt, depth, batch, ubatch, measured, measured_pp, n_gen, drafts)
    echo_json(report) if as_json else print_ceiling_report(report)


@click.command()
@model_options
@click.option("--config", metavar="PATH", help="A Hugging Face config.json.")
@click.option("-c", "--context", metavar="N[,N]", help="Context lengths. [default: the model's trained context, else "
              "4096]")
@click.option("-b", "--batch", default=1, show_default=True, type=_POSITIVE, help="Sequences at once.")
@click.option("--memory", metavar="SIZE", help="Memory to fit the cache in: 80GB is 80e9 bytes, 80GiB 80 x 2^30.")
@click.option("--hardware", metavar="NAME", help="Take --memory from a catalog chip.")
@click.option("--weights", metavar="SIZE", help="Weight bytes already in memory. [default: the model file's size]")
@json_option
def kv(kv_type, context, batch, memory, hardware, weights, as_json, **model) -> None:
    """KV-cache bytes per token, per context, per batch, and what fits in memory."""
    from pdx.domain.ceilings import napkin
    from pdx.reports.display.napkin import print_kv_report

    spec = napkin.ModelSpec(**{k: v for k, v in model.items() if k != "weight_type"})
    report = napkin.kv_calculation(spec, kv_type, context, batch, memory, hardware, weights)
    echo_json(report) if as_json else print_kv_report(report)


def register(cli: click.Group) -> None:
    cli.add_command(ceiling)
    cli.add_command(kv)
