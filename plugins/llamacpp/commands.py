"""``pdx llamacpp``: build and inspect the llama.cpp that pdx uses."""

from __future__ import annotations

import sys

import click

# The choices, repeated from accelerator.CHOICES so that `pdx --help` imports nothing of the build;
# tests/test_llamacpp_accelerator.py checks that the two agree.
GPU_CHOICES = ("auto", "cuda", "hip", "vulkan", "sycl", "metal", "cpu")


def _to_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


@click.group()
def llamacpp() -> None:
    """Build and inspect llama.cpp for the llama.cpp backends."""


@llamacpp.command()
@click.option("--version", "version", default=None, help="llama-cpp-python release whose llama.cpp to build.")
@click.option("-j", "--jobs", type=click.IntRange(min=1, max=1024), help="Parallel compile jobs. [default: all CPUs]")
@click.option("--bindings/--no-bindings", default=True, show_default=True,
              help="Also install the matching llama-cpp-python bindings into this Python.")
@click.option("--force", is_flag=True, help="Rebuild even if a build is cached.")
@click.option("--gpu", type=click.Choice(GPU_CHOICES), default="auto", show_default=True,
              help="Accelerator to build for; auto asks nvidia-smi, rocminfo, vulkaninfo, sycl-ls (macOS: Metal).")
@click.option("--dry-run", is_flag=True, help="Print the accelerator found, why, and the CMake commands; build "
              "nothing.")
def install(version, jobs, bindings, force, gpu, dry_run) -> None:
    """Build llama-bench, llama-server, llama-quantize and libllama into the pdx cache (once),
    for this machine's GPU where it has one (see --gpu)."""
    from pdx.plugins.llamacpp.build import LLAMA_CPP_PYTHON_VERSION, install as do_install, plan
    from pdx.plugins.llamacpp.progress import NinjaProgress

    version = version or LLAMA_CPP_PYTHON_VERSION
    if dry_run:
        click.echo("\n".join(plan(version, gpu, jobs).describe()))
        return
    progress = NinjaProgress(_to_stderr, live=sys.stderr.isatty())
    build = do_install(version, jobs=jobs, bindings=bindings, force=force, gpu=gpu, progress=progress,
                       say=lambda line: click.echo(line, err=True))
    click.echo(build.bin_dir)


@llamacpp.command()
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.argument("dest", type=click.Path(dir_okay=False))
@click.option("--type", "qtype", required=True, help="llama-quantize type: Q4_K_M, Q5_K_M, Q6_K, IQ4_XS, MXFP4_MOE...")
@click.option("-t", "--threads", type=click.IntRange(min=1), help="Threads for llama-quantize.")
def quantize(source, dest, qtype, threads) -> None:
    """Quantise a GGUF (e.g. a synthetic F16 one) with llama.cpp's own llama-quantize."""
    from pdx.plugins.llamacpp.build import quantize as do_quantize

    click.echo(do_quantize(source, dest, qtype, threads))


@llamacpp.command()
def info() -> None:
    """Show every cached llama.cpp build with its backend, and the binaries pdx would use."""
    from pdx.plugins.llamacpp.build import GPU_ENV, all_builds, find_build
    from pdx.plugins.llamacpp.locate import find_llama_bench

    builds, used = all_builds(), find_build()
    for build in builds:
        mark = "*" if used and build.root == used.root else " "
        click.echo(f"{mark} {build.gpu:<6} {build.label}, from llama-cpp-python {build.version}, "
                   f"built {build.built_at[:19]}: {build.root}")
    if builds:
        click.echo(f"(* the build pdx uses; {GPU_ENV}=cuda|hip|vulkan|sycl|metal|cpu chooses another)")
    else:
        click.echo("pdx build: none (run `pdx llamacpp install`)")
    bench = find_llama_bench()
    click.echo(f"llama-bench: {bench or 'not found'}")
