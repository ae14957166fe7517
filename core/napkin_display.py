"""``pdx ceiling`` and ``pdx kv`` reports in the terminal."""

from __future__ import annotations

import click

from pdx.ceiling_display import rate
from pdx.display import human_count
from pdx.units import fmt_si


def _bytes(n: float) -> str:
    """Decimal and binary, as vendors and operating systems each print sizes."""
    binary = next((f"{n / s:.2f} {u}" for u, s in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
                   if n >= s), f"{n:.0f} B")
    return f"{fmt_si(n, 'B', 4)} ({binary})"


def _phase_line(name: str, entry: dict, where: str) -> str:
    bounds = ", ".join(f"{kind} {rate(entry[kind + '_bound'])}" for kind in ("memory", "compute")
                       if entry.get(kind + "_bound"))
    missing = [kind for kind in ("memory", "compute") if not entry.get(kind + "_bound")]
    unknown = f"; {' and '.join(missing)} bound unknown" if missing else ""
    if not entry.get("ceiling"):
        return f"{name:>9}  no ceiling: give --bandwidth or --flops"
    named = f"{entry['bound']}-bound" if entry.get("bound") else f"the {'memory' if 'compute' in missing else 'compute'} bound"
    return f"{name:>9}  {rate(entry['ceiling'])} t/s ceiling, {named} ({bounds} t/s{unknown}) {where}"


def print_ceiling_report(report: dict) -> None:
    hw, model, dec, pre = report["hardware"], report["model"], report["decode"], report["prefill"]
    flops = f"{fmt_si(hw['flops'], 'FLOP/s')} {hw['flops_dtype'] or ''}".strip() if hw.get("flops") else "FLOP/s unknown"
    memory = f", {_bytes(hw['memory_bytes'])}" if hw.get("memory_bytes") else ""
    source = f" ({hw['source']})" if hw["source"] != "given" else ""
    click.echo(f"{'hardware':>9}  {hw['label']}{source}: {fmt_si(hw.get('bandwidth'), 'B/s')}, {flops}{memory}")
    kv = f", KV {model['kv_bytes_per_token']:,.0f} B/token" if model.get("kv_bytes_per_token") else ""
    click.echo(f"{'model':>9}  {model['name']}: {_bytes(model['weight_bytes_per_step'])} read per step, "
               f"{human_count(model['params'])} parameters{kv}")
    batch = f"batch {dec['batch']}, " if dec["batch"] > 1 else ""
    click.echo(_phase_line("decode", dec, f"at {batch}depth {dec['depth']}"))
    click.echo(_phase_line("prefill", pre, f"for {pre['tokens']} tokens at {batch}depth {pre['depth']}"))
    if report.get("ridge_point"):
        knee = report.get("knee_batch")
        knee_text = f"; decode turns compute-bound at batch ~{knee:.3g}" if knee else "; decode stays memory-bound"
        click.echo(f"{'ridge':>9}  {report['ridge_point']:.3g} FLOP/byte{knee_text}")
    for name, entry in (("decode", dec), ("prefill", pre)):
        if entry.get("fraction"):
            above = "  ABOVE THE CEILING: a measurement error or wrong figures" if entry["fraction"] > 1 else ""
            click.echo(f"{'measured':>9}  {rate(entry['measured'])} t/s {name} = {entry['fraction']:.0%} of its ceiling{above}")
    if report.get("fit"):
        fit = report["fit"]
        click.echo(f"{'memory':>9}  {_bytes(fit['left_bytes'])} left after weights: {fit['max_tokens']:,} KV tokens")


def print_kv_report(report: dict) -> None:
    d = report["dims"]
    click.echo(f"{'KV cache':>9}  {report['bytes_per_token']:,.0f} bytes/token ({_bytes(report['bytes_per_token'])}) = "
               f"2 x {d['n_kv_heads']} KV heads x {d['head_dim']} head dim x {d['n_layers']} layers x "
               f"{report['element_bytes']:.4g} bytes ({report['type']}); from {d['source']}")
    for row in report["contexts"]:
        batch = f", {_bytes(row['bytes_batch'])} for batch {report['batch']}" if report["batch"] > 1 else ""
        click.echo(f"{'context':>9}  {row['context']:,} tokens: {_bytes(row['bytes_per_sequence'])} per sequence{batch}")
        if "fit" in row:
            fit = row["fit"]
            click.echo(f"{'memory':>9}  {_bytes(fit['memory_bytes'])} - {_bytes(fit['weights_bytes'])} weights = "
                       f"{_bytes(fit['left_bytes'])} left: batch {fit['max_batch']:,} fits at {row['context']:,} tokens "
                       f"({fit['max_tokens']:,} tokens in all)")
