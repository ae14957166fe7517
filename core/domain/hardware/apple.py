"""Apple Silicon: the chip and its memory from ``sysctl``.

``machdep.cpu.brand_string`` names the chip ("Apple M3 Max") but not its
bin, and some bins differ in memory bandwidth (an M3 Max with a 14-core CPU
has 300GB/s, with 16 cores 400GB/s). The CPU core count separates them;
without it, the memory size does, since Apple sells each bin with its own
memory sizes. :func:`apple_chip` is what MLX and any other Mac backend use.
"""

from __future__ import annotations

import subprocess

from pdx.domain.hardware import catalog
from pdx.domain.hardware.catalog import Chip

SYSCTL_KEYS = ("machdep.cpu.brand_string", "hw.memsize", "hw.physicalcpu", "hw.perflevel0.physicalcpu",
               "hw.perflevel1.physicalcpu")


def parse_sysctl(text: str) -> dict[str, str]:
    """``sysctl a b c`` output ("key: value" lines) as a dict."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            values[key.strip()] = value.strip()
    return values


def read_sysctl(keys: tuple[str, ...] = SYSCTL_KEYS) -> dict[str, str]:
    """Ask the real ``sysctl`` (macOS); keys it does not know are left out."""
    found = {}
    for key in keys:
        try:
            out = subprocess.run(["sysctl", key], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            return found
        found |= parse_sysctl(out.stdout) if out.returncode == 0 else {}
    return found


def _int(value: str | None) -> int | None:
    return int(value) if value and value.strip().isdigit() else None


def apple_chip(brand_string: str, memsize: int | str | None = None, cpu_cores: int | None = None) -> Chip | None:
    """The catalog entry for ``sysctl -n machdep.cpu.brand_string`` and ``hw.memsize``.

    ``cpu_cores`` (``hw.physicalcpu``) settles the bin when given; else the
    memory size does; a chip the catalog does not know gives None.
    """
    brand = " ".join(brand_string.split()).lower()
    candidates = [c for c in catalog.chips() if c.match.get("apple_brand", "").lower() == brand]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    if cpu_cores:
        by_cores = [c for c in candidates if c.match.get("cpu_cores") == cpu_cores]
        if by_cores:
            return by_cores[0]
    gib = _int(str(memsize)) if memsize is not None else None
    if gib:
        size = round(gib / 2**30)
        by_memory = [c for c in candidates if size in c.match.get("memory_gb", ())]
        if len(by_memory) == 1:
            return by_memory[0]
    # Still ambiguous: the full chip, which the plain name ("m3 max") also means.
    return catalog.find(brand) or candidates[0]


def describe(values: dict[str, str]) -> dict:
    """The Mac as stored with a run: chip, memory, cores and the catalog match."""
    brand = values.get("machdep.cpu.brand_string", "")
    memsize = _int(values.get("hw.memsize"))
    # hw.physicalcpu where captured; many published captures have only machdep.cpu.core_count (the same count)
    cores = _int(values.get("hw.physicalcpu")) or _int(values.get("machdep.cpu.core_count"))
    chip = apple_chip(brand, memsize, cores) if brand.startswith("Apple") else None
    return {
        "brand": brand or None,
        "memory_bytes": memsize,
        "physical_cores": cores,
        "performance_cores": _int(values.get("hw.perflevel0.physicalcpu")),
        "efficiency_cores": _int(values.get("hw.perflevel1.physicalcpu")),
        "catalog": chip.id if chip else None,
    }
