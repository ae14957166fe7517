"""Detect the machine: CPU model, cores, sockets, memory.

Read from the OS directly (/proc on Linux, sysctl on macOS) so the figures
are the ones the kernel schedules with.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path

# CPU features that change which kernels an engine runs.
_INTERESTING_FLAGS = (
    "avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni",
    "amx_tile", "amx_int8", "amx_bf16", "asimd", "sve", "i8mm",
)


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def _linux_cpu(cpuinfo: str) -> dict:
    model, flags = None, set()
    cores: set[tuple[str, str]] = set()
    sockets: set[str] = set()
    physical, core = "0", None
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("model name", "Model", "cpu model") and not model:
            model = value
        elif key == "physical id":
            physical = value
            sockets.add(value)
        elif key == "core id":
            core = value
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
        elif not line.strip() and core is not None:
            cores.add((physical, core))
            core = None
    if core is not None:
        cores.add((physical, core))
    return {
        "name": model or platform.processor() or "unknown CPU",
        "physical_cores": len(cores) or None,
        "sockets": len(sockets) or 1,
        "flags": sorted(f for f in _INTERESTING_FLAGS if f in flags),
    }


def _linux_memory(meminfo: str) -> int | None:
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _sysctl(name: str) -> str | None:
    try:
        out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def detect_cpu() -> dict:
    system = platform.system()
    info: dict = {"arch": platform.machine(), "logical_cores": os.cpu_count() or 1, "usable_cpus": _usable_cpus()}
    if system == "Linux":
        try:
            info |= _linux_cpu(Path("/proc/cpuinfo").read_text())
            info["memory_bytes"] = _linux_memory(Path("/proc/meminfo").read_text())
        except OSError:
            pass
    elif system == "Darwin":
        info["name"] = _sysctl("machdep.cpu.brand_string") or platform.processor()
        memsize = _sysctl("hw.memsize")
        info["memory_bytes"] = int(memsize) if memsize and memsize.isdigit() else None
        cores = _sysctl("hw.physicalcpu")
        info["physical_cores"] = int(cores) if cores and cores.isdigit() else None
        info["sockets"] = 1
    info.setdefault("name", platform.processor() or "unknown CPU")
    info.setdefault("memory_bytes", None)
    info.setdefault("physical_cores", None)
    return info


def detect() -> dict:
    """The machine as stored with every run; ``id`` identifies the hardware model."""
    cpu = detect_cpu()
    identity = {
        "cpu": cpu["name"],
        "arch": cpu["arch"],
        "physical_cores": cpu.get("physical_cores"),
        "logical_cores": cpu["logical_cores"],
        "sockets": cpu.get("sockets"),
        "memory_gib": round((cpu.get("memory_bytes") or 0) / 2**30),
    }
    hw_id = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return {"id": hw_id, "kind": "cpu", "name": cpu["name"], "cpu": cpu, "gpus": []}


def default_threads() -> int:
    """Threads an engine gets unless the user says otherwise: the physical
    cores this process may use (as llama-bench does), else the usable CPUs."""
    cpu = detect_cpu()
    usable = cpu["usable_cpus"]
    physical = cpu.get("physical_cores")
    if physical and cpu["logical_cores"] == usable:
        return max(1, min(physical, usable))
    return max(1, usable)
