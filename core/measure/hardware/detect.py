"""Detect the machine: CPU, memory, NVIDIA GPUs, Apple Silicon, and the
catalog entry each matches.

``detect()`` is what every run stores; its ``catalog`` names the chip whose
vendor figures apply to an accelerated engine (a GPU, else an Apple or AMD
SoC), or None, in which case the ceilings come from probes.
"""

from __future__ import annotations

import hashlib
import json

from pdx.domain.hardware import catalog, nvidia
from pdx.domain.hardware.cpu import detect_cpu


def detect() -> dict:
    """The machine as stored with every run; ``id`` identifies the hardware model."""
    cpu = detect_cpu()
    gpus = nvidia.query()
    identity = {
        "cpu": cpu["name"],
        "arch": cpu["arch"],
        "physical_cores": cpu.get("physical_cores"),
        "logical_cores": cpu["logical_cores"],
        "sockets": cpu.get("sockets"),
        "memory_gib": round((cpu.get("memory_bytes") or 0) / 2**30),
    }
    if gpus:  # a CPU-only machine keeps the id it had before GPUs were detected
        identity["gpus"] = [f"{g['name']} {g.get('memory_mib')}" for g in gpus]
    hw_id = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    soc = (cpu.get("apple") or {}).get("catalog") or getattr(catalog.match_cpu(cpu["name"]), "id", None)
    matched = next((g["catalog"] for g in gpus if g.get("catalog")), None) or soc
    kind = "gpu" if gpus else "soc" if soc else "cpu"
    name = gpus[0]["name"] if gpus else cpu["name"]
    return {"id": hw_id, "kind": kind, "name": name, "cpu": cpu, "gpus": gpus, "catalog": matched}


def default_threads() -> int:
    """Threads an engine gets unless the user says otherwise: the physical
    cores this process may use (as llama-bench does), else the usable CPUs."""
    cpu = detect_cpu()
    usable = cpu["usable_cpus"]
    physical = cpu.get("physical_cores")
    if physical and cpu["logical_cores"] == usable:
        return max(1, min(physical, usable))
    return max(1, usable)
