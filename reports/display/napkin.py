"""``pdx ceiling`` and ``pdx kv`` reports in the terminal."""

from __future__ import annotations

import click

from pdx.reports.display.ceilings import rate
from pdx.base.units import fmt_si, human_bytes, human_count


def _bytes(n: float) -> str:
    """Decimal and binary, as vendors and operating systems each print sizes."""
    return f"{fmt_si(n, 'B', 4)} ({human_bytes(n)})"


def _phase_line(name: str, entry: dict, where: str) -> str:
    bounds = ", ".join(f"{kind} {rate(entry[kind + '_bound'])}" for kind in ("memory", "compute")
                       if entry.get(kind + "_bound"))
    missing = [kind for kind in ("memory", "compute") if not entry.get(kind + "_bound")]
    unknown = f"; {' and '.join(missing)} bound unknown" if missing else ""
    if not entry.get("ceiling"):
        known = f" (only the {bounds} t/s, which cannot bind {name})" if bounds else ""
        return f"{name:>9}  no ceiling {where}{known}: {entry.get('missing') or 'give --bandwidth and --flops'}"
    other = "memory" if "compute" in missing else "compute"
    named = f"{entry['bound']}-bound" if entry.get("bound") else f"the {other} bound"
    line = f"{name:>9}  {rate(entry['ceiling'])} t/s ceiling, {named} ({bounds} t/s{unknown}) {where}"
    if entry.get("missing"):
        line += f"; {entry['missing']}"
    if entry.get("experts_per_layer"):
        line += f"; {entry['experts_per_layer']:.3g} experts per layer read per step"
    return line


def _hardware_line(hw: dict, name: str = "hardware") -> str:
    flops = f"{fmt_si(hw['flops'], 'FLOP/s')} {hw['flops_dtype'] or ''}".strip() if hw.get("flops") \
        else "FLOP/s unknown"
    memory = f", {_bytes(hw['memory_bytes'])}" if hw.get("memory_bytes") else ""
    source = f" ({hw['source']})" if hw["source"] != "given" else ""
    return f"{name:>9}  {hw['label']}{source}: {fmt_si(hw.get('bandwidth'), 'B/s')}, {flops}{memory}"


def _model_lines(model: dict) -> list[str]:
    kv = f", KV {model['kv_bytes_per_token']:,.0f} B/token" if model.get("kv_bytes_per_token") else ""
    params = f"{human_count(model['params'])} parameters" if model.get("params") else "parameters unknown"
    if model.get("active_params"):
        params += f", {human_count(model['active_params'])} active"
    lines = [f"{'model':>9}  {model['name']}: {_bytes(model['weight_bytes_per_step'])} read per step, {params}{kv}"]
    if model.get("routing"):
        lines.append(f"{'experts':>9}  {_bytes(model['expert_bytes'])} of expert weights; assumed: {model['routing']}")
    if model.get("sliding_layers"):
        lines.append(f"{'window':>9}  {model['sliding_layers']} layers attend to the last {model['sliding_window']:,} "
                     "tokens only (their KV cache stops growing there)")
    return lines


def print_ceiling_report(report: dict) -> None:
    hw, model, dec, pre = report["hardware"], report["model"], report["decode"], report["prefill"]
    sources = report.get("sources") or {}
    for other in (sources or {hw["source"]: report}).values():
        click.echo(_hardware_line(other["hardware"]))
    for line in _model_lines(model):
        click.echo(line)
    batch = f"batch {dec['batch']}, " if dec["batch"] > 1 else ""
    for name, entry, where in (("decode", dec, f"at {batch}depth {dec['depth']}"),
                               ("prefill", pre, f"for {pre['tokens']} tokens at {batch}depth {pre['depth']}")):
        whose = f" [{entry['source']}]" if sources and entry.get("source") else ""
        click.echo(_phase_line(name, entry, where) + whose)
        for source, other in sources.items():  # each set of figures' own ceiling, the binding one above
            if other[name].get("ceiling") and source != entry.get("source"):
                click.echo(f"{'':>9}  {source}: {rate(other[name]['ceiling'])} t/s")
    counted = dec.get("speculative")
    if counted:
        draft = (f", {counted['drafted_per_token']:.2f} drafted tokens of a {_bytes(counted['draft_bytes'])} draft"
                 if counted["draft_counted"] else ", the draft's reads not counted")
        click.echo(f"{'spec':>9}  speculative: {counted['target_passes_per_token']:.2f} target passes{draft} per "
                   f"token; one token a pass allows {rate(counted['single_token_ceiling'])} t/s")
    if report.get("ridge_point"):
        knee = report.get("knee_batch")
        knee_text = f"; decode turns compute-bound at batch ~{knee:.3g}" if knee else "; decode stays memory-bound"
        if knee and report.get("knee_experts_per_layer"):
            knee_text += f" ({report['knee_experts_per_layer']:.3g} experts per layer read there)"
        click.echo(f"{'ridge':>9}  {report['ridge_point']:.3g} FLOP/byte{knee_text}")
    for name, entry in (("decode", dec), ("prefill", pre)):
        if entry.get("fraction"):
            above = "  ABOVE THE CEILING: a measurement error or wrong figures" if entry["fraction"] > 1 else ""
            click.echo(f"{'measured':>9}  {rate(entry['measured'])} t/s {name} = {entry['fraction']:.0%} of its "
                       f"ceiling{above}")
    if report.get("fit"):
        fit = report["fit"]
        click.echo(f"{'memory':>9}  {_bytes(fit['left_bytes'])} left after weights: {fit['max_tokens']:,} KV tokens")


def print_kv_report(report: dict) -> None:
    d = report["dims"]
    click.echo(f"{'KV cache':>9}  {report['bytes_per_token']:,.0f} bytes/token ({_bytes(report['bytes_per_token'])}) = "
               f"2 x {d['n_kv_heads']} KV heads x {d['head_dim']} head dim x {d['n_layers']} layers x "
               f"{report['element_bytes']:.4g} bytes ({report['type']}); from {d['source']}")
    if d.get("n_sliding_layers"):
        full = d["n_layers"] - d["n_sliding_layers"]
        click.echo(f"{'window':>9}  {d['n_sliding_layers']} of {d['n_layers']} layers keep only the last "
                   f"{d['sliding_window']:,} tokens: past that, a token adds "
                   f"{report['bytes_per_token'] * full / d['n_layers']:,.0f} bytes ({full} full-attention layers)")
    for row in report["contexts"]:
        batch = f", {_bytes(row['bytes_batch'])} for batch {report['batch']}" if report["batch"] > 1 else ""
        click.echo(f"{'context':>9}  {row['context']:,} tokens: {_bytes(row['bytes_per_sequence'])} per "
                   f"sequence{batch}")
        if "fit" in row:
            fit = row["fit"]
            click.echo(f"{'memory':>9}  {_bytes(fit['memory_bytes'])} - {_bytes(fit['weights_bytes'])} weights = "
                       f"{_bytes(fit['left_bytes'])} left: batch {fit['max_batch']:,} fits at {row['context']:,} "
                       f"tokens "
                       f"({fit['max_tokens']:,} tokens in all)")
