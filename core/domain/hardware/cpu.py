"""The CPU and system memory, read from the OS (/proc on Linux, sysctl on
macOS), so the figures are the ones the kernel schedules with."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from pdx.domain.hardware import apple

# CPU features that change which kernels an engine runs.
_INTERESTING_FLAGS = (
    "avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni",
    "amx_tile", "amx_int8", "amx_bf16", "asimd", "sve", "i8mm",
)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def parse_cpuinfo(cpuinfo: str) -> dict:
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


def parse_meminfo(meminfo: str) -> int | None:
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def detect_cpu() -> dict:
    system = platform.system()
    info: dict = {"arch": platform.machine(), "logical_cores": os.cpu_count() or 1, "usable_cpus": usable_cpus()}
    if system == "Linux":
        try:
            info |= parse_cpuinfo(Path("/proc/cpuinfo").read_text())
            info["memory_bytes"] = parse_meminfo(Path("/proc/meminfo").read_text())
        except OSError:
            pass
    elif system == "Darwin":
        mac = apple.describe(apple.read_sysctl())
        info |= {"name": mac["brand"] or platform.processor(), "memory_bytes": mac["memory_bytes"],
                 "physical_cores": mac["physical_cores"], "sockets": 1, "apple": mac}
    info.setdefault("name", platform.processor() or "unknown CPU")
    info.setdefault("memory_bytes", None)
    info.setdefault("physical_cores", None)
    return info
