"""pdx's own meters, read through Zeus (``pip install 'pdx[energy]'``): NVIDIA GPUs through NVML and
AMD GPUs through AMD SMI (the board's energy counter), a CPU's RAPL packages and DRAM, and an Apple
SoC's CPU, GPU, Neural Engine and DRAM (``zeus-apple-silicon``, no sudo). Zeus is chosen over
reading each interface by hand: it is maintained by people who measure GPU energy for a living,
unwraps RAPL's 32-bit counters, honours CUDA_VISIBLE_DEVICES and knows which NVIDIA parts have an
energy counter (Volta and later).

Each source imports Zeus only when asked to find its meters, so ``pdx`` starts as fast without it.
"""

from __future__ import annotations

from importlib import metadata
from typing import Callable

from pdx.contract.meter import Meter, MeterSource, MeterUnavailable

INSTALL = "pip install 'pdx[energy]'"


def _zeus(module: str):
    """Zeus's device module, or MeterUnavailable when Zeus is not installed."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MeterUnavailable(f"Zeus is not installed ({INSTALL})") from None


def _via(interface: str) -> str:
    return f"zeus {metadata.version('zeus')} over {interface}"


def _why(absent: str, exc: Exception) -> str:
    """A few words: the interface is absent (Zeus's own long message left out), or there and unreadable."""
    text = str(exc)
    if "ermission" in text or "privilege" in text:
        return f"present but not readable by this user ({text.splitlines()[0][:160]}); run pdx as root or use zeusd"
    return absent


def _mj(read: Callable[[], float | int | None]) -> Callable[[], float]:
    def joules() -> float:
        value = read()
        if value is None:
            raise RuntimeError("the counter returned nothing")
        return value / 1000.0
    return joules


def find_gpus() -> list[Meter]:
    gpu = _zeus("zeus.device.gpu")
    try:
        gpus = gpu.get_gpus()
    except Exception as exc:  # ZeusGPUInitError, and what NVML raises on a broken driver
        raise MeterUnavailable(_why("no NVML or AMD SMI", exc)) from None
    interface = "NVML" if type(gpus).__name__.startswith("NVIDIA") else "AMD SMI"
    found = []
    for index in range(len(gpus)):
        if not gpus.supports_get_total_energy_consumption(index):
            continue  # NVIDIA parts before Volta count no energy; their power could be sampled, but is not here
        found.append(Meter(name=f"gpu:{index}", covers="gpu board", device=str(gpus.get_name(index)),
                           read=_mj(lambda i=index: gpus.get_total_energy_consumption(i)), source=_via(interface)))
    if not found:
        raise MeterUnavailable(f"{interface} found {len(gpus)} GPU(s), none with an energy counter")
    return found


def find_rapl() -> list[Meter]:
    cpu = _zeus("zeus.device.cpu")
    try:
        cpus = cpu.get_cpus()
    except Exception as exc:  # ZeusCPUInitError: no /sys/class/powercap/intel-rapl, or no permission
        raise MeterUnavailable(_why("no RAPL", exc)) from None
    found = []
    for index in range(len(cpus)):
        read = lambda i=index: cpus.get_total_energy_consumption(i)  # noqa: E731
        found.append(Meter(name=f"rapl:{index}", covers="cpu package", device=f"CPU package {index}",
                           read=_mj(lambda r=read: r().cpu_mj), source=_via("RAPL")))
        if cpus.supports_get_dram_energy_consumption(index):
            found.append(Meter(name=f"rapl:{index}:dram", covers="dram", device=f"DRAM of package {index}",
                               read=_mj(lambda r=read: r().dram_mj), source=_via("RAPL")))
    if not found:
        raise MeterUnavailable("RAPL lists no package")
    return found


# An Apple SoC's counters that do not overlap: the CPU's total, the GPU with its SRAM, the ANE, DRAM.
_APPLE = (("cpu", "soc cpu", ("cpu_total_mj",)), ("gpu", "soc gpu", ("gpu_mj", "gpu_sram_mj")),
          ("ane", "soc ane", ("ane_mj",)), ("dram", "soc dram", ("dram_mj",)))


def find_apple() -> list[Meter]:
    soc_module = _zeus("zeus.device.soc")
    try:
        soc = soc_module.get_soc()
    except Exception as exc:  # ZeusSoCInitError: not a Mac, or zeus-apple-silicon missing
        raise MeterUnavailable(_why("no Apple SoC counters", exc)) from None
    available = soc.get_available_metrics()
    found = []
    for part, covers, fields in _APPLE:
        if not available & set(fields):
            continue

        def read(fields=fields) -> float:
            measured = soc.get_total_energy_consumption()
            return sum(getattr(measured, f) or 0 for f in fields)

        found.append(Meter(name=f"soc:{part}", covers=covers, device=f"Apple SoC {part.upper()}", read=_mj(read),
                           source=_via("IOReport (zeus-apple-silicon)")))
    if not found:
        raise MeterUnavailable("the Apple SoC reports no energy counter")
    return found


SOURCES = (
    MeterSource("gpu", find_gpus, INSTALL),
    MeterSource("rapl", find_rapl, INSTALL),
    MeterSource("apple", find_apple, "pip install 'pdx[energy]' 'zeus[apple]'"),
)
