"""``pdx hw`` in the terminal: detected hardware, catalog match, probe figures."""

from __future__ import annotations

import click

from pdx.units import human_bytes
from pdx.ceilings import sources
from pdx.hardware import catalog
from pdx.units import fmt_si


def _gb(n: float | None) -> str:
    return fmt_si(n, "B/s")


def print_machine(machine: dict) -> None:
    cpu = machine["cpu"]
    click.echo(f"{'cpu':>9}  {cpu['name']}, {cpu['arch']}, {cpu.get('physical_cores') or '?'} cores "
               f"({cpu['logical_cores']} threads, {cpu.get('sockets') or '?'} socket), {human_bytes(cpu.get('memory_bytes'))}")
    apple = cpu.get("apple")
    if apple:
        click.echo(f"{'apple':>9}  {apple['brand']}, {apple.get('performance_cores')}P+{apple.get('efficiency_cores')}E cores")
    for gpu in machine.get("gpus", []):
        clocks = f", {gpu['clock_sm_max_mhz']} MHz max" if gpu.get("clock_sm_max_mhz") else ""
        click.echo(f"{'gpu ' + str(gpu.get('index', '')):>9}  {gpu['name']}, {human_bytes(gpu.get('memory_bytes'))}, "
                   f"driver {gpu.get('driver') or '?'}{clocks}")
    if not machine.get("gpus"):
        click.echo(f"{'gpus':>9}  none found (nvidia-smi absent or reported none)")


def print_chip(figures: dict | None) -> None:
    if not figures:
        click.echo(f"{'catalog':>9}  no match: ceilings come from the probes (see `pdx hw list`, `--hardware`)")
        return
    chip = catalog.get(figures["id"])
    flops = ", ".join(f"{k} {fmt_si(chip.dense_flops(k), 'FLOP/s')}" for k in chip.tflops) or "no FLOP/s published"
    memory = f"{chip.memory_gb.value:g} GB" if chip.memory_gb else "memory unknown"
    click.echo(f"{'catalog':>9}  {chip.name}: {_gb(chip.bandwidth)}, {memory}; {flops}")


def print_meters(found: dict) -> None:
    """The energy meters found and what each covers; one line saying why where there are none."""
    if not found["meters"]:
        by_reason: dict[str, list[str]] = {}
        for source, reason in found["missing"].items():
            by_reason.setdefault(reason, []).append(source)
        why = "; ".join(f"{', '.join(sources)}: {reason}" for reason, sources in by_reason.items()) or "no meter source"
        click.echo(f"{'energy':>9}  no meter here, so no J/token ({why})")
        return
    for meter in found["meters"]:
        click.echo(f"{'energy':>9}  {meter['name']}: {meter['covers']} of {meter['device']} ({meter['source']})")


def print_device_probe(result: dict) -> None:
    """A device probe (MLX, CUDA): bandwidth per kernel and FLOP/s per data type."""
    bw, info = result["bandwidth"], result.get("device_info") or {}
    cached = " (cached; `pdx hw probe --force` measures again)" if result.get("cached") else ""
    name = info.get("device_name") or info.get("architecture") or ""
    click.echo(f"{'probe':>9}  {result['device']} {name}, measured {result['measured_at']}{cached}".replace("  ,", ","))
    _print_caveat(result)
    kernels = ", ".join(f"{k} {_gb(bw[k])}" for k in ("copy", "read"))
    click.echo(f"{'memory':>9}  {_gb(bw['best'])} ({kernels}; best of {bw['repetitions']}, "
               f"{human_bytes(bw['array_bytes'])} arrays)")
    for key, mm in result["matmul"].items():
        click.echo(f"{'matmul':>9}  {fmt_si(mm['flops'], 'FLOP/s'):>14} {key:<5} {mm['dtype']}, {mm['n']}^3 "
                   f"(best of {mm['repetitions']})")
    click.echo(f"{'ridge':>9}  {result['matmul']['f32']['flops'] / bw['best']:.3g} FLOP/byte (float32)")


def _print_caveat(result: dict) -> None:
    """A probe taken under load, said under its first line: every ceiling from it is likely low."""
    caveat = sources.caveat(result)
    if caveat:
        click.echo(f"{'warning':>9}  {caveat}")


def print_probe(result: dict) -> None:
    if result.get("device", "cpu") != "cpu":
        print_device_probe(result)
        return
    bw, mm = result["bandwidth"], result["matmul"]["f32"]
    cached = " (cached; `pdx hw probe --force` measures again)" if result.get("cached") else ""
    click.echo(f"{'probe':>9}  {result['threads']} threads, measured {result['measured_at']}{cached}")
    _print_caveat(result)
    kernels = ", ".join(f"{k} {_gb(bw[k])}" for k in ("copy", "triad", "read"))
    click.echo(f"{'memory':>9}  {_gb(bw['best'])} ({kernels}; best of {bw['repetitions']}, "
               f"{human_bytes(bw['array_bytes'])} arrays)")
    click.echo(f"{'matmul':>9}  {fmt_si(mm['flops'], 'FLOP/s')} float32 GEMM {mm['n']}^3 via {mm['blas']} "
               f"(best of {mm['repetitions']})")
    click.echo(f"{'ridge':>9}  {mm['flops'] / bw['best']:.3g} FLOP/byte")


def print_catalog(chips) -> None:
    for chip in chips:
        flops = chip.flops_for("fp16")
        compute = f"{fmt_si(flops[1], 'FLOP/s')} {flops[0]}" if flops else "-"
        memory = f"{chip.memory_gb.value:g} GB" if chip.memory_gb else "-"
        click.echo(f"{chip.id:24} {chip.name:44} {_gb(chip.bandwidth):>11} {memory:>7}  {compute}")
