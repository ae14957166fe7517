"""``pdx model``: make synthetic models and read model metadata."""

from __future__ import annotations

from pathlib import Path

import click

from pdx.cli.base import Integer, echo_json, json_option
from pdx.contract.errors import ModelError
from pdx.base.files import output_folder, output_path
from pdx.domain.models import identify
from pdx.contract.numbers import MAX_TOKENS


@click.group()
def model() -> None:
    """Synthetic models and model metadata."""


@model.command()
@click.option("--shape", default="100m", show_default=True, help="Named shape (see `pdx model shapes`).")
@click.option("--type", "dtype", default="f16", show_default=True,
              help="Weight type: f32, f16, q8_0, q4_0 (GGUF; K-quants, IQ and MXFP4 with llama.cpp's "
                   "llama-quantize, after `pdx llamacpp install`; mxfp4 is its MXFP4_MOE); float32, float16, "
                   "bfloat16, mlx-q8, mlx-q4 (HF; mlx-q*: mlx-lm's own layout).")
@click.option("--format", "layout", type=click.Choice(["gguf", "hf"]), default="gguf", show_default=True,
              help="gguf: one file for llama.cpp; hf: a Hugging Face directory for vLLM and MLX.")
@click.option("-o", "--output", type=click.Path(),
              help="File (GGUF) or directory (HF) to write; a synthetic model there is replaced, any other folder "
                   "that is not empty refused. [default: in the pdx cache]")
@click.option("--seed", default=0, show_default=True, type=Integer(min=None), help="Seed of the random weights.")
@click.option("--n-embd", type=Integer(min=1, max=MAX_TOKENS), help="Override the shape's embedding width.")
@click.option("--n-layers", type=Integer(min=1, max=MAX_TOKENS), help="Override the number of layers.")
@click.option("--n-heads", type=Integer(min=1, max=MAX_TOKENS), help="Override the number of attention heads.")
@click.option("--n-kv-heads", type=Integer(min=1, max=MAX_TOKENS), help="Override the number of KV heads.")
@click.option("--n-ff", type=Integer(min=1, max=MAX_TOKENS), help="Override the feed-forward width.")
@click.option("--n-vocab", type=Integer(min=1, max=MAX_TOKENS), help="Override the vocabulary size.")
@click.option("--n-ctx", type=Integer(min=1, max=MAX_TOKENS), help="Override the trained context length.")
@json_option
def synth(shape, dtype, layout, output, seed, as_json, **dims) -> None:
    """Write a random-weight model (GGUF or HF layout) of a named shape or explicit dims, in its family's
    architecture: llama (Mixtral with experts), gemma3 or gpt-oss."""
    import os

    from pdx.domain.synth import default_hf_path, default_model_path, get_shape, write_gguf, write_hf
    from pdx.base.units import human_bytes, human_count

    chosen = get_shape(shape).with_dims(**dims)
    if layout == "hf":
        path = Path(output) if output else default_hf_path(chosen.name, dtype, seed)
        if os.path.isfile(path):
            raise ModelError(f"-o {output}: it is a file; an HF model is a folder", "give a new folder")
        output_folder(path, "cannot write a model into")  # a device, a named pipe, a name too long
        write_hf(chosen, dtype, path, seed, replace=True)  # pdx's own model there before is replaced
    else:
        path = Path(output) if output else default_model_path(chosen.name, dtype, seed)
        if os.path.isdir(path):
            raise ModelError(f"-o {output}: it is a folder; a GGUF model is one file",
                             "give a file path such as model.gguf (--format hf writes a folder)")
        output_folder(path.parent, "cannot write a model into", make=True)  # as the default path's folders are made
        output_path(path)  # a new name or a regular file: never a device, a named pipe, a name too long
        write_gguf(chosen, dtype, path, seed)
    info = identify(path)
    if as_json:
        echo_json(info.to_dict())
    else:
        click.echo(f"{path}  {chosen.name} {info.dtype}  {human_count(info.n_params)} params  "
                   f"{human_bytes(info.file_bytes)}")


@model.command()
@json_option
def shapes(as_json) -> None:
    """List the named shapes."""
    from pdx.domain.synth import SHAPES
    from pdx.base.units import human_count

    if as_json:
        echo_json({name: s.to_dict() for name, s in SHAPES.items()})
        return
    for s in SHAPES.values():
        moe = (f" experts={s.n_experts_used}/{s.n_experts} ff_expert={s.expert_ff} "
               f"active={human_count(s.active_params)}") if s.is_moe else ""
        window = f" window={s.sliding_window}x{s.n_sliding_layers}" if s.n_sliding_layers else ""
        click.echo(f"{s.name:14} {human_count(s.n_params):>9}  d={s.n_embd} layers={s.n_layers} "
                   f"heads={s.n_heads}/{s.n_kv_heads} head_dim={s.head_dim} ff={s.n_ff} vocab={s.n_vocab}{moe}{window}")


@model.command()
@click.argument("path")
@json_option
def info(path, as_json) -> None:
    """Show what a model file is: architecture, size, dims, hash."""
    from pdx.base.units import human_bytes, human_count

    found = identify(path)
    if as_json:
        echo_json(found.to_dict())
        return
    rows = [
        ("name", found.name), ("format", found.format), ("architecture", found.architecture),
        ("parameters", f"{human_count(found.n_params)} ({found.n_params})"), ("type", found.dtype),
        ("layers", found.n_layers), ("heads", f"{found.n_heads} (KV {found.n_kv_heads}, dim {found.head_dim})"),
        ("embedding", found.n_embd), ("feed-forward", found.n_ff), ("vocabulary", found.n_vocab),
        ("context", found.n_ctx_train), ("file size", f"{human_bytes(found.file_bytes)} ({found.file_bytes} bytes)"),
        ("sha256", found.sha256), ("synthetic", found.synthetic or "no"),
    ]
    rows[4:4] = _moe_rows(found.extra)
    for key, value in rows:
        click.echo(f"{key:>13}: {value}")


def _moe_rows(extra: dict) -> list[tuple[str, str]]:
    """Experts, active parameters and sliding windows, where the model has them."""
    from pdx.base.units import human_bytes, human_count

    rows = []
    experts = extra.get("experts")
    if experts:
        shared = f", {experts['shared']} shared" if experts.get("shared") else ""
        rows.append(("experts", f"{experts['used']} of {experts['count']} per token{shared}; "
                                f"{human_count(experts['expert_params'])} params in "
                                f"{human_bytes(experts['expert_bytes'])} routed, "
                                f"{human_count(experts['non_expert_params'])} in "
                                f"{human_bytes(experts['non_expert_bytes'])} always read"))
        if experts.get("active_params"):
            rows.append(("active", f"{human_count(experts['active_params'])} ({experts['active_params']}) "
                                   f"of {human_count(experts['total_params'])} parameters per token"))
    if extra.get("sliding_window"):
        rows.append(("window", f"{extra['sliding_layers']} layers attend to the last {extra['sliding_window']:,} "
                     f"tokens"))
    return rows


def register(cli: click.Group) -> None:
    cli.add_command(model)
