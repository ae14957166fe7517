"""Run conditions: what else the machine did, and what state it was in,
while each test ran, stored with the test (its ``conditions`` record).

A noisy result is only useful when it says why. pdx reads, at a test's
start and end: the CPU time of all processes minus its own process tree's
(an engine's server is a child of pdx, an in-process engine is pdx), the
load average, the CPU frequency and governor, the thermal state and the
power source, wherever the OS lets a user read them (None where not), and
each NVIDIA GPU's clocks, temperature, power and throttle reasons
(:mod:`pdx.measure.conditions.gpu`; None with no GPU). On
Apple Silicon the GPU's memory limit against the model and its KV cache is
added by the caller (:mod:`pdx.measure.conditions.gpu_memory`).
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass

from pdx.measure.conditions import cpu, gpu, machine
from pdx.contract.record import Conditions

CONDITIONS_VERSION = 1
# Other processes' CPU use, in cores, from which the bench table names it (a quiet
# desktop's daemons stay well below; a busy loop on one core is 1.0).
BUSY_CORES = 0.25
# CPU time is counted in ticks (1/100 s on Linux and macOS), and the machine's count and each process of pdx's
# tree are read at a window's two ends: a few ticks astray. Over a short window that reads as cores nothing used
# (a 0.03 s test beside a one-core loop was seen at 1.2 other cores, then at 0.3): such a window says nothing.
MIN_CPU_WINDOW_S = 0.5


@dataclass(frozen=True)
class Snapshot:
    wall: float
    machine_ticks: dict | None
    own_ticks: int | None
    load: list[float] | None
    gpus: dict | None = None  # pdx.measure.conditions.gpu.read()


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def snapshot(pid: int | None = None) -> Snapshot:
    """The counters a test's conditions are the difference of."""
    return Snapshot(time.monotonic(), cpu.machine_ticks(), cpu.tree_ticks(pid or os.getpid()), _load(), gpu.read())


def _cores(ticks: float, seconds: float) -> float:
    return round(max(0.0, ticks / cpu.clock_ticks() / seconds), 2)


def cpu_use(start: Snapshot, end: Snapshot) -> dict:
    """Cores used by other processes, by pdx's own tree, and taken by a hypervisor, over the window (None
    where the window is too short to read them)."""
    seconds = end.wall - start.wall
    result: dict = {"window_s": round(seconds, 3), "cpu_count": os.cpu_count(),
                    "other_cpu_cores": None, "own_cpu_cores": None, "steal_cores": None}
    if seconds < MIN_CPU_WINDOW_S or not (start.machine_ticks and end.machine_ticks):
        return result
    busy = end.machine_ticks["busy"] - start.machine_ticks["busy"]
    result["steal_cores"] = _cores(end.machine_ticks["steal"] - start.machine_ticks["steal"], seconds)
    if start.own_ticks is not None and end.own_ticks is not None:
        own = max(0, end.own_ticks - start.own_ticks)
        result |= {"own_cpu_cores": _cores(own, seconds), "other_cpu_cores": _cores(busy - own, seconds)}
    return result


def measure(start: Snapshot, cooldown_s: float = 0.0, end: Snapshot | None = None) -> Conditions:
    """The conditions of the window since ``start``: a JSON-ready record."""
    end = end or snapshot()
    system = platform.system()
    return {
        "version": CONDITIONS_VERSION,
        **cpu_use(start, end),
        "load_average": {"start": start.load, "end": end.load},
        "frequency": machine.frequency(),
        "thermal": machine.thermal(system),
        "power": machine.power(system),
        "gpu": gpu.window(start.gpus, end.gpus),
        "cooldown_s": cooldown_s,
    }


def notes(conditions: dict | None) -> list[str]:
    """What the conditions say against a result, in words for the bench table; [] when nothing."""
    if not conditions:
        return []
    found = []
    other = conditions.get("other_cpu_cores")
    if other is not None and other >= BUSY_CORES:
        found.append(f"other processes used {other:.1f} cores")
    steal = conditions.get("steal_cores")
    if steal is not None and steal >= BUSY_CORES:
        found.append(f"the hypervisor took {steal:.1f} cores")
    thermal = conditions.get("thermal") or {}
    if thermal.get("throttled"):
        found.append(f"CPU speed limited to {thermal['cpu_speed_limit']}%")
    if (conditions.get("power") or {}).get("source") == "battery":
        found.append("on battery")
    resident = conditions.get("gpu_memory") or {}
    if resident.get("fits") is False:
        found.append(f"model + KV cache exceed the GPU's {resident['limit_bytes'] / 2**30:.1f} GiB limit")
    return found + gpu.notes(conditions.get("gpu"))
