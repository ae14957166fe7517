"""The conditions each test ran under, as ``pdx show`` prints them."""

from __future__ import annotations

from rich.console import Console


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def condition_text(c: dict) -> str:
    """One line: other processes' and pdx's CPU use, load, frequency, heat, power, GPU memory, cool-down."""
    parts = []
    if c.get("other_cpu_cores") is not None:
        own = f" (pdx {c['own_cpu_cores']:.2f})" if c.get("own_cpu_cores") is not None else ""
        parts.append(f"other processes {c['other_cpu_cores']:.2f} of {c.get('cpu_count') or '?'} cores{own}")
    if c.get("steal_cores"):
        parts.append(f"steal {c['steal_cores']:.2f} cores")
    load = c.get("load_average") or {}
    if load.get("start") and load.get("end"):
        parts.append(f"load {load['start'][0]:.2f} -> {load['end'][0]:.2f}")
    freq = c.get("frequency") or {}
    if freq.get("mhz"):
        top = f" of {freq['max_mhz']:.0f}" if freq.get("max_mhz") else ""
        governor = f", {freq['governor']}" if freq.get("governor") else ""
        parts.append(f"{freq['mhz']:.0f}{top} MHz ({freq['source']}{governor})")
    thermal = c.get("thermal") or {}
    if thermal.get("max_celsius") is not None:
        parts.append(f"{thermal['max_celsius']:.0f} °C hottest zone")
    if thermal.get("cpu_speed_limit") is not None:
        parts.append(f"CPU speed limit {thermal['cpu_speed_limit']}%")
    power = c.get("power") or {}
    if power.get("source"):
        charge = f" {power['battery_percent']:.0f}%" if power.get("battery_percent") is not None else ""
        parts.append(f"{power['source']}{charge}")
    gpu = c.get("gpu_memory") or {}
    if gpu.get("limit_bytes"):
        verdict = "fits" if gpu.get("fits") else "DOES NOT FIT"
        parts.append(f"GPU memory {_gib(gpu['need_bytes'])} of {_gib(gpu['limit_bytes'])} ({verdict})")
    if c.get("cooldown_s"):
        parts.append(f"after {c['cooldown_s']:g} s cool-down")
    return ", ".join(parts) or "nothing readable"


def print_conditions(run: dict, console: Console) -> None:
    recorded = [t for t in run["tests"] if t.get("conditions")]
    if not recorded:
        return
    console.print("[bold]conditions[/bold]", highlight=False)
    for test in recorded:
        console.print(f"  {test['name']}: {condition_text(test['conditions'])}", highlight=False, markup=False)
