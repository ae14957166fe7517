"""``pdx hw``: the hardware here, its catalog match and probe figures."""

from __future__ import annotations

import click

from pdx.cli.base import Integer, echo_json, json_option
from pdx.contract.numbers import MAX_THREADS

threads_option = click.option("-t", "--threads", type=Integer(min=1, max=MAX_THREADS), help="Threads the probes use. "
                              "[default: physical cores]")


@click.group(invoke_without_command=True)
@threads_option
@click.option("--no-probe", is_flag=True, help="Skip the probes (they run once per machine and thread count).")
@json_option
@click.pass_context
def hw(ctx, threads, no_probe, as_json) -> None:
    """Show the detected hardware, its catalog match and the probes' figures."""
    if ctx.invoked_subcommand:
        return
    from pdx import api
    from pdx.reports.display.hardware import print_chip, print_machine, print_meters, print_probe

    report = api.hardware_report(threads, run_probe=not no_probe)
    if as_json:
        echo_json(report)
        return
    print_machine(report["machine"])
    print_chip(report["catalog"])
    print_meters(report["meters"])
    if "probe" in report:
        print_probe(report["probe"])


@hw.command()
@threads_option
@click.option("--force", is_flag=True,
              help="Measure again even when figures are cached. The new figures replace the cached ones, unless "
                   "the machine was busy (other processes used a quarter of a core or more while it ran, or, where "
                   "that cannot be read, load average 0.5 or more as it started; the output warns of it) and any "
                   "figure came out lower: the cached probe then stays in use, and pdx says so. A probe taken "
                   "under load is kept only until a quiet one replaces it, and every ceiling from it says so.")
@click.option("--device", default="cpu", show_default=True, metavar="DEVICE",
              help="Where to measure: cpu (numpy), mlx (mlx:gpu, mlx:cpu; through MLX) or cuda (cuda:N; through "
              "torch).")
@click.option("--array-mib", type=click.IntRange(min=1), help="Device probes: MiB per bandwidth array. [per device]")
@click.option("--matmul-n", type=click.IntRange(min=16), help="Device probes: matrix size n of the n^3 products. [per "
              "device]")
@click.option("--reps", type=click.IntRange(min=1), help="Device probes: timed repetitions of each figure. [per "
              "device]")
@json_option
def probe(threads, force, device, array_mib, matmul_n, reps, as_json) -> None:
    """Measure memory bandwidth and matmul FLOP/s on a device, at the benchmark's thread count."""
    from pdx import api
    from pdx.reports.display.hardware import print_probe

    sizes = {"array_bytes": array_mib and array_mib * 2**20, "matmul_n": matmul_n, "reps": reps}
    if device == "cpu" and any(sizes.values()):
        raise click.BadParameter("sizes are for device probes; the cpu probe has fixed sizes", param_hint="--device")
    extra = {k: v for k, v in sizes.items() if v} if device != "cpu" else {}
    report = api.hardware_report(threads, force=force, device=device, sizes=extra)
    echo_json(report["probe"]) if as_json else print_probe(report["probe"])
    if "kept_over" in report["probe"]:
        click.echo(f"pdx: {report['probe']['kept_over']['note']}", err=True)


@hw.command(name="list")
@json_option
def list_chips(as_json) -> None:
    """List the hardware catalog (vendor figures, each with its source)."""
    from pdx.domain.hardware import catalog
    from pdx.reports.display.hardware import print_catalog

    if as_json:
        echo_json([chip.figures() for chip in catalog.chips()])
    else:
        print_catalog(catalog.chips())


def register(cli: click.Group) -> None:
    cli.add_command(hw)
