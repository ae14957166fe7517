"""``pdx hw`` in the terminal: detected hardware, catalog match, probe figures."""

from __future__ import annotations

import click
from rich.markup import escape

from pdx.measure import ceiling_sources as sources
from pdx.reports.display import make_console
from pdx.reports.display.tables import fit
from pdx.reports.display.text import printable
from pdx.domain.energy.figures import why_none
from pdx.reports.figures import Column
from pdx.domain.hardware import catalog
from pdx.reports.manifest import plural
from pdx.base.units import fmt_si, human_bytes


def _gb(n: float | None) -> str:
    return fmt_si(n, "B/s")


def print_machine(machine: dict) -> None:
    cpu = machine["cpu"]
    click.echo(f"{'cpu':>9}  {cpu['name']}, {cpu['arch']}, {cpu.get('physical_cores') or '?'} cores "
               f"({cpu['logical_cores']} threads, {cpu.get('sockets') or '?'} socket), "
               f"{human_bytes(cpu.get('memory_bytes'))}")
    apple = cpu.get("apple")
    if apple:
        click.echo(f"{'apple':>9}  {apple['brand']}, "
                   f"{apple.get('performance_cores')}P+{apple.get('efficiency_cores')}E cores")
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
    if chip is None:  # figures of a chip this catalog lacks (a report another pdx made)
        click.echo(f"{'catalog':>9}  {figures.get('name') or figures['id']}: not in this pdx's catalog")
        return
    flops = ", ".join(f"{k} {fmt_si(chip.dense_flops(k), 'FLOP/s')}" for k in chip.tflops) or "no FLOP/s published"
    memory = f"{chip.memory_gb.value:g} GB" if chip.memory_gb else "memory unknown"
    click.echo(f"{'catalog':>9}  {chip.name}: {_gb(chip.bandwidth)}, {memory}; {flops}")


def print_meters(found: dict) -> None:
    """The energy meters found and what each covers; one line saying why where there are none."""
    if not found["meters"]:
        click.echo(f"{'energy':>9}  no meter here, so no J/token ({why_none(found)})")
        return
    for meter in found["meters"]:
        # A meter plugin's name, device and source are a third party's text: shown, never obeyed.
        line = f"{'energy':>9}  {meter['name']}: {meter['covers']} of {meter['device']} ({meter['source']})"
        click.echo(printable(line))


def _layouts(entry: dict) -> str:
    """An 8-bit product's second-operand layouts: the one that counted, each other's figure, any refused."""
    if not entry.get("layout"):
        return ""
    others = [f"{name} {fmt_si(flops, 'FLOP/s')}" for name, flops in (entry.get("layouts") or {}).items()
              if name != entry["layout"]]
    others += [f"{name} refused" for name in entry.get("refused") or {}]
    return f"; second operand {entry['layout']}" + (f"; {', '.join(others)}" if others else "")


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
                   f"(best of {mm['repetitions']}{_layouts(mm)})")
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
    click.echo(f"{'probe':>9}  {plural(result['threads'], 'thread')}, measured {result['measured_at']}{cached}")
    _print_caveat(result)
    kernels = ", ".join(f"{k} {_gb(bw[k])}" for k in ("copy", "triad", "read"))
    click.echo(f"{'memory':>9}  {_gb(bw['best'])} ({kernels}; best of {bw['repetitions']}, "
               f"{human_bytes(bw['array_bytes'])} arrays)")
    click.echo(f"{'matmul':>9}  {fmt_si(mm['flops'], 'FLOP/s')} float32 GEMM {mm['n']}^3 via {mm['blas']} "
               f"(best of {mm['repetitions']})")
    click.echo(f"{'ridge':>9}  {mm['flops'] / bw['best']:.3g} FLOP/byte")


_CATALOG_COLUMNS = (Column("name", "name", keep=0, left=True, wraps=True), Column("id", "id", keep=4, left=True),
                    Column("bandwidth", "memory bandwidth", keep=0), Column("memory", "memory", keep=3),
                    Column("compute", "fp16 compute", keep=0))


def print_catalog(chips) -> None:
    """The catalog as a table that fits the terminal: a chip's name (what --hardware takes) and its
    figures whole; its id, and its memory, go under the table where they do not fit."""
    rows = []
    for chip in chips:
        flops = chip.flops_for("fp16")
        rows.append([escape(chip.name), escape(chip.id), _gb(chip.bandwidth),
                     f"{chip.memory_gb.value:g} GB" if chip.memory_gb else "-",
                     f"{fmt_si(flops[1], 'FLOP/s')} {flops[0]}" if flops else "-"])
    console = make_console()
    fit(list(_CATALOG_COLUMNS), rows, console.width).print(console)
