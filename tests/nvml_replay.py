"""A stand-in for the ``pynvml`` module, answering with what the real one said on an NVIDIA H200
(tests/data/h200): clocks, power limit and clocks event reasons from its ``nvidia-smi -q``,
temperature and name from its ``nvidia-smi --query-gpu`` CSV, power draw from its NVML trace (one
reading of the trace per call, from ``phase``). No NVIDIA GPU or driver exists where the tests run."""

from __future__ import annotations

import json
import types
from pathlib import Path

from pdx.measure.conditions import nvidia_smi
from pdx.measure.conditions.gpu_figures import REASON

H200 = Path(__file__).parent / "data" / "h200"


def q_text(*active: str, idle: bool = True) -> str:
    """The recorded ``nvidia-smi -q`` (of an idle GPU), with the named reasons (its own words) set to
    Active, and Idle to Not Active unless ``idle``."""
    text = (H200 / "nvidia-smi-q.txt").read_text()
    if not idle:
        line = next(line for line in text.splitlines() if line.strip().startswith("Idle "))
        text = text.replace(line, line.replace("Active", "Not Active"))
    for words in active:
        line = next(line for line in text.splitlines() if line.strip().startswith(words + " "))
        text = text.replace(line, line.replace("Not Active", "Active"))
    return text


def trace_power_mw(phase: str) -> list[int]:
    """The NVML trace's power readings (mW) in a phase: "idle" (before the load) or "load"."""
    trace = json.loads((H200 / "nvml-trace-h200.json").read_text())
    marks = dict(trace["phases"])
    low, high = ((marks["idle_start"], marks["load_start"]) if phase == "idle"
                 else ((marks["load_start"] + marks["load_end"]) // 2, marks["load_end"]))  # past the ramp
    return [power for ns, _, power in trace["readings"] if low <= ns < high]


def replayed_pynvml(q: str | None = None, phase: str = "idle", sm_mhz: float | None = None) -> types.ModuleType:
    """A pynvml whose one GPU answers as the recorded H200 did (``sm_mhz`` replaces the idle SM clock)."""
    (device,) = nvidia_smi.parse_q(q or q_text())
    (listed,) = nvidia_smi.parse_query((H200 / "nvidia-smi-query.csv").read_text())
    reading = device["reading"] | {"celsius": listed["reading"]["celsius"]}
    if sm_mhz is not None:
        reading["sm_mhz"] = sm_mhz
    power = iter(trace_power_mw(phase) * 100)
    mask = sum(REASON[k].bit for k in reading["reasons"])
    nv = types.ModuleType("pynvml")
    nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM, nv.NVML_TEMPERATURE_GPU = 1, 2, 0
    clocks = {1: reading["sm_mhz"], 2: reading["memory_mhz"]}
    maxima = {1: reading["max_sm_mhz"], 2: reading["max_memory_mhz"]}
    nv.nvmlInit = lambda: None
    nv.nvmlDeviceGetCount = lambda: 1
    nv.nvmlDeviceGetHandleByIndex = lambda index: ("handle", index)
    nv.nvmlDeviceGetName = lambda handle: listed["name"]
    nv.nvmlDeviceGetClockInfo = lambda handle, clock: int(clocks[clock])
    nv.nvmlDeviceGetMaxClockInfo = lambda handle, clock: int(maxima[clock])
    nv.nvmlDeviceGetTemperature = lambda handle, sensor: int(reading["celsius"])
    nv.nvmlDeviceGetPowerUsage = lambda handle: next(power)
    nv.nvmlDeviceGetEnforcedPowerLimit = lambda handle: int(reading["power_limit_w"] * 1000)
    nv.nvmlDeviceGetCurrentClocksEventReasons = lambda handle: mask
    return nv
