"""The GPU's state at a test's start and end: SM and memory clocks and their
maxima, temperature, power draw and limit, and the reasons the driver gives
for holding the clocks down (NVIDIA's "clocks event reasons", formerly
"throttle reasons").

A GPU figure is only trustworthy at the clocks it ran at: a power cap, a
thermal slowdown or a power brake lowers them mid-test and the result
measures the cooling, not the chip. Each figure is described once
(:mod:`pdx.measure.conditions.gpu_figures`) and read through NVML (``pynvml``, from
nvidia-ml-py: ``pip install 'pdx[gpu]'``) or, without it, ``nvidia-smi
--query-gpu`` (:mod:`pdx.measure.conditions.nvidia_smi`). AMD GPUs (AMD SMI) are not
read yet: their key stays None, as on a machine with no GPU.
"""

from __future__ import annotations

import functools
import shutil
from types import ModuleType
from typing import Any, Callable

from pdx.measure.conditions import nvidia_smi
from pdx.measure.conditions.gpu_figures import FIGURES, REASON, SLOW_CLOCK, GpuFigure, reasons_from_mask
from pdx.measure.conditions.machine import run_tool


# --- NVML -------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _pynvml() -> ModuleType | None:
    """pynvml, initialised once; None where it is not installed or finds no driver."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:  # ImportError, or NVMLError with no driver or no GPU
        return None
    return pynvml


def _figure(nv: Any, handle: Any, figure: GpuFigure) -> float | None:
    try:
        return round(float(figure.nvml(nv, handle)), 1)
    except Exception:  # NVMLError: not supported on this GPU
        return None


def read_nvml(nv: Any) -> list[dict]:
    """Every GPU NVML sees: index, name and one reading."""
    devices = []
    for index in range(nv.nvmlDeviceGetCount()):
        handle = nv.nvmlDeviceGetHandleByIndex(index)
        name = nv.nvmlDeviceGetName(handle)
        reading: dict = {f.key: _figure(nv, handle, f) for f in FIGURES}
        get_reasons = (getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
                       or getattr(nv, "nvmlDeviceGetCurrentClocksThrottleReasons"))
        try:
            reading["reasons"] = reasons_from_mask(int(get_reasons(handle)))
        except Exception:
            reading["reasons"] = None
        devices.append({"index": index, "name": name.decode() if isinstance(name, bytes) else str(name),
                        "reading": reading})
    return devices


# --- one reading of every GPU, and a test's window -------------------------------------------------------

def read(nv: Any = None, smi: Callable[..., str | None] | None = None) -> dict | None:
    """Every NVIDIA GPU's state now, through NVML, else nvidia-smi; None where there is none. ``nv`` and
    ``smi`` stand in for pynvml and the nvidia-smi runner (recorded replays)."""
    nv = nv if nv is not None else _pynvml()
    if nv is not None:
        try:
            devices = read_nvml(nv)
        except Exception:  # a driver that went away mid-run
            devices = []
        if devices:
            return {"source": "nvml", "devices": devices}
    if smi is None:
        if shutil.which("nvidia-smi") is None:
            return None
        smi = run_tool
    for query in nvidia_smi.QUERIES:
        text = smi("nvidia-smi", f"--query-gpu={query}", "--format=csv")
        if text is not None:
            devices = nvidia_smi.parse_query(text)
            return {"source": "nvidia-smi", "devices": devices} if devices else None
    return None


def window(start: dict | None, end: dict | None) -> dict | None:
    """A test's GPU conditions: each GPU's reading at its start and at its end (None with no GPU)."""
    if not start and not end:
        return None
    first = {d["index"]: d for d in (start or {}).get("devices", [])}
    last = {d["index"]: d for d in (end or {}).get("devices", [])}
    devices = [{"index": i, "name": (last.get(i) or first[i])["name"],
                "start": (first.get(i) or {}).get("reading"), "end": (last.get(i) or {}).get("reading")}
               for i in sorted(first.keys() | last.keys())]
    return {"source": (end or start)["source"], "devices": devices}


def notes(gpu: dict | None) -> list[str]:
    """What a test's GPU conditions say against it: a throttle reason at either end, or an SM clock well
    below its maximum at the end, still busy ([] when nothing). The start is not judged by its clock: a
    GPU waiting for the test is rightly slow."""
    found = []
    for device in (gpu or {}).get("devices", []):
        readings = [r for r in (device.get("start"), device.get("end")) if r]
        held = sorted({k for r in readings for k in r.get("reasons") or [] if k in REASON and REASON[k].throttles},
                      key=list(REASON).index)
        end = device.get("end") or {}
        if held:
            found.append(f"GPU {device['index']} throttled: {', '.join(REASON[k].words for k in held)}")
        # without the reasons (an nvidia-smi query lacking them) a low clock may be an idle GPU's: not judged
        elif (end.get("sm_mhz") is not None and end.get("max_sm_mhz") and end.get("reasons") is not None
              and "idle" not in end["reasons"] and end["sm_mhz"] < SLOW_CLOCK * end["max_sm_mhz"]):
            found.append(f"GPU {device['index']} SM clock {end['sm_mhz']:.0f} of {end['max_sm_mhz']:.0f} MHz")
    return found
