"""Where llama.cpp ran, read from what it logs, in llama-bench's words (:mod:`pdx.domain.placement`): the
in-process and server backends have no llama-bench record, but llama.cpp says the same things as it
loads a model: ``using device CUDA0 (NVIDIA H200) - 142567 MiB free`` for each device it uses (none on
the CPU), ``load_tensors: offloaded 17/17 layers to GPU``, and its build's backends in its system info
(``CUDA : ARCHS = 900 | ... | CPU : SSE3 = 1 | ...``)."""

from __future__ import annotations

import re
from typing import Iterable

_DEVICE = re.compile(r"using device (\S+) \((.*?)\)(?: \(.*?\))? - ")
_OFFLOADED = re.compile(r"offloaded (\d+/\d+) layers to GPU")
_FEATURES = re.compile(r"(?:^|\|)\s*([A-Za-z][\w-]*) : ")  # "CUDA : ARCHS = 900 |": a backend and its features
# Lines worth keeping from a load's log (llama.cpp logs hundreds; these say where it ran).
MARKERS = ("using device ", "layers to GPU", "system_info")


def backends_of(system_info: str) -> list[str]:
    """The backends a build lists in its system info, in its order."""
    return list(dict.fromkeys(_FEATURES.findall(system_info)))


def from_log(lines: Iterable[str], system_info: str = "") -> dict:
    """backends (comma-joined, "CPU" where there is no other, as llama-bench writes it), gpu_info (the
    devices' descriptions, ", "-joined) and offloaded ("17/17"), each where the log says it; {} where it
    says none of them."""
    devices: dict[str, str] = {}
    offloaded = None
    listed = backends_of(system_info)
    for line in lines:
        if found := _DEVICE.search(line):
            devices.setdefault(found.group(1), found.group(2))
        if found := _OFFLOADED.search(line):
            offloaded = found.group(1)
        if "system_info" in line:
            listed += backends_of(line.split("system_info", 1)[1])
    if not (devices or offloaded or listed):
        return {}  # a quiet log (llama-server's default verbosity leaves the load out): nothing is claimed
    # a device's name is its backend's and an index: CUDA0, Vulkan1, ROCm0; Metal has none
    names = [re.sub(r"\d+$", "", name) for name in devices] + [b for b in listed if b != "CPU"]
    result: dict = {"backends": ",".join(dict.fromkeys(names)) or "CPU"}
    if devices:
        result["gpu_info"] = ", ".join(devices.values())
    if offloaded:
        result["offloaded"] = offloaded
    return result
