"""What a GPU reading holds, described once for every reader (NVML, ``nvidia-smi --query-gpu``,
``nvidia-smi -q``) and for the pages: each figure's key, words, unit and where each reader finds it, and
the reasons a driver gives for holding the clocks down."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class GpuFigure:
    """One figure of a GPU reading: its record key, its words and unit, and where each reader finds it."""

    key: str
    label: str
    unit: str
    query: str  # nvidia-smi --query-gpu field
    smi_q: tuple[tuple[str, ...], ...]  # nvidia-smi -q (section, line) paths, the first present is read
    nvml: Callable[[Any, Any], float]  # (pynvml, device handle) -> the figure in its unit
    of: str | None = None  # the figure this one is shown against ("1410 of 1980 MHz")
    bound: bool = False  # a maximum or limit: shown only as another figure's "of"


FIGURES = (
    GpuFigure("sm_mhz", "SM clock", "MHz", "clocks.current.sm", (("Clocks", "SM"),),
              lambda nv, h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM), of="max_sm_mhz"),
    GpuFigure("max_sm_mhz", "SM clock max", "MHz", "clocks.max.sm", (("Max Clocks", "SM"),),
              lambda nv, h: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM), bound=True),
    GpuFigure("memory_mhz", "memory clock", "MHz", "clocks.current.memory", (("Clocks", "Memory"),),
              lambda nv, h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM), of="max_memory_mhz"),
    GpuFigure("max_memory_mhz", "memory clock max", "MHz", "clocks.max.memory", (("Max Clocks", "Memory"),),
              lambda nv, h: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM), bound=True),
    GpuFigure("celsius", "temperature", "°C", "temperature.gpu", (("Temperature", "GPU Current Temp"),),
              lambda nv, h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
    GpuFigure("power_w", "power draw", "W", "power.draw",
              (("GPU Power Readings", "Instantaneous Power Draw"), ("GPU Power Readings", "Average Power Draw"),
               ("GPU Power Readings", "Power Draw"), ("Power Readings", "Power Draw")),
              lambda nv, h: nv.nvmlDeviceGetPowerUsage(h) / 1000, of="power_limit_w"),
    GpuFigure("power_limit_w", "power limit", "W", "power.limit",
              (("GPU Power Readings", "Current Power Limit"), ("Power Readings", "Power Limit")),
              lambda nv, h: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000, bound=True),
)


@dataclass(frozen=True)
class Reason:
    """A reason the driver holds the clocks down: NVML's bit, the record key, nvidia-smi -q's words, and
    whether it speaks against a result (idle and a user's clock setting do not)."""

    bit: int
    key: str
    words: str
    throttles: bool


REASONS = (
    Reason(0x1, "idle", "Idle", False),
    Reason(0x2, "applications_clocks", "Applications Clocks Setting", False),
    Reason(0x4, "sw_power_cap", "SW Power Cap", True),
    Reason(0x8, "hw_slowdown", "HW Slowdown", True),
    Reason(0x10, "sync_boost", "Sync Boost", False),
    Reason(0x20, "sw_thermal", "SW Thermal Slowdown", True),
    Reason(0x40, "hw_thermal", "HW Thermal Slowdown", True),
    Reason(0x80, "hw_power_brake", "HW Power Brake Slowdown", True),
    Reason(0x100, "display_clock", "Display Clock Setting", False),
)
REASON = {r.key: r for r in REASONS}
# Under load (no idle reason) an SM clock below this share of its maximum is named against the result:
# boost clocks sit at or near the maximum on a cool, uncapped GPU.
SLOW_CLOCK = 0.7


def reasons_from_mask(mask: int) -> list[str]:
    """The reasons NVML's bit mask holds, by key."""
    return [r.key for r in REASONS if mask & r.bit]
