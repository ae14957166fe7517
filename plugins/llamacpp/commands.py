"""``pdx llamacpp``: build and inspect the llama.cpp that pdx uses."""

from __future__ import annotations

import click


@click.group()
def llamacpp() -> None:
    """Build and inspect llama.cpp for the llama.cpp backends."""


@llamacpp.command()
@click.option("--version", "version", default=None, help="llama-cpp-python release whose llama.cpp to build.")
@click.option("-j", "--jobs", type=click.IntRange(min=1, max=1024), help="Parallel compile jobs. [default: all CPUs]")
@click.option("--bindings/--no-bindings", default=True, show_default=True,
              help="Also install the matching llama-cpp-python bindings into this Python.")
@click.option("--force", is_flag=True, help="Rebuild even if a build is cached.")
def install(version, jobs, bindings, force) -> None:
    """Build llama-bench, llama-server, llama-quantize and libllama into the pdx cache (once)."""
    from pdx.plugins.llamacpp.build import LLAMA_CPP_PYTHON_VERSION, install as do_install

    build = do_install(version or LLAMA_CPP_PYTHON_VERSION, jobs=jobs, bindings=bindings, force=force,
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
    """Show the llama.cpp build and binaries pdx would use."""
    from pdx.plugins.llamacpp.build import find_build
    from pdx.plugins.llamacpp.locate import find_llama_bench

    build = find_build()
    if build:
        click.echo(f"pdx build: {build.root} (llama.cpp {build.commit}, build {build.build_number}, "
                   f"from llama-cpp-python {build.version}, built {build.built_at})")
    else:
        click.echo("pdx build: none (run `pdx llamacpp install`)")
    bench = find_llama_bench()
    click.echo(f"llama-bench: {bench or 'not found'}")
