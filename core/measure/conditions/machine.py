"""The machine's state where the OS lets a user read it: CPU frequency and
governor, thermal state, power source. Linux from /sys (and /proc/cpuinfo),
macOS from ``pmset``. Every reader returns None for what it cannot read: a
VM has no thermal zones, a server no battery, and absent is not zero.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from statistics import mean

SYS = Path("/sys")
PROC = Path("/proc")


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


# --- CPU frequency ------------------------------------------------------------------------------------

def parse_cpuinfo_mhz(text: str) -> list[float]:
    """Every core's "cpu MHz" from /proc/cpuinfo (x86 kernels print it; others may not)."""
    found = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "cpu MHz" and (mhz := _number(value.strip())) is not None and mhz > 0:
            found.append(mhz)
    return found


def frequency(sys: Path = SYS, proc: Path = PROC) -> dict | None:
    """Current MHz (mean, min, max over cores), the maximum and the governor, where readable."""
    cpus = sorted((sys / "devices/system/cpu").glob("cpu[0-9]*/cpufreq"))
    khz = [k for d in cpus if (k := _number(_text(d / "scaling_cur_freq"))) and k > 0]
    governors = sorted({g for d in cpus if (g := _text(d / "scaling_governor"))})
    top = [k for d in cpus if (k := _number(_text(d / "cpuinfo_max_freq"))) and k > 0]
    source = "cpufreq"
    mhz = [k / 1000 for k in khz]
    if not mhz:
        mhz, source = parse_cpuinfo_mhz(_text(proc / "cpuinfo") or ""), "cpuinfo"
    if not mhz and not governors:
        return None
    result: dict = {"source": source, "governor": ",".join(governors) or None,
                    "max_mhz": round(max(top) / 1000, 1) if top else None}
    if mhz:
        result |= {"mhz": round(mean(mhz), 1), "min_mhz": round(min(mhz), 1), "high_mhz": round(max(mhz), 1)}
    return result


# --- thermal -----------------------------------------------------------------------------------------

def linux_thermal(sys: Path = SYS) -> dict | None:
    """Each thermal zone's temperature (the kernel gives millidegrees Celsius)."""
    zones = []
    for zone in sorted((sys / "class/thermal").glob("thermal_zone*")):
        milli = _number(_text(zone / "temp"))
        if milli is not None and -50_000 < milli < 200_000:  # a broken sensor reads absurd values
            zones.append({"zone": _text(zone / "type") or zone.name, "celsius": round(milli / 1000, 1)})
    if not zones:
        return None
    return {"source": "thermal_zone", "zones": zones, "max_celsius": max(z["celsius"] for z in zones)}


_PMSET_LIMIT = re.compile(r"^\s*(CPU_Scheduler_Limit|CPU_Available_CPUs|CPU_Speed_Limit)\s*=\s*(\d+)", re.M)
_PMSET_LEVEL = re.compile(r"^\s*(Thermal|Performance) Warning Level\s*(?:set to|=)?\s*(\d+)", re.M | re.I)


def parse_pmset_therm(text: str) -> dict:
    """``pmset -g therm``: the CPU speed limit macOS imposes (100 = none) and any warning level."""
    result: dict = {"source": "pmset"}
    for key, value in _PMSET_LIMIT.findall(text):
        result[key.lower()] = int(value)
    for kind, value in _PMSET_LEVEL.findall(text):
        result[f"{kind.lower()}_warning_level"] = int(value)
    limit = result.get("cpu_speed_limit")
    result["throttled"] = limit is not None and limit < 100
    return result


# --- power source ------------------------------------------------------------------------------------

def linux_power(sys: Path = SYS) -> dict | None:
    """Mains or battery from /sys/class/power_supply (None on a machine with neither)."""
    mains_online, batteries = [], []
    for supply in sorted((sys / "class/power_supply").glob("*")):
        kind = (_text(supply / "type") or "").lower()
        if kind == "mains":
            mains_online.append(_text(supply / "online") == "1")
        elif kind == "battery":
            batteries.append({"status": (_text(supply / "status") or "").lower() or None,
                              "percent": _number(_text(supply / "capacity"))})
    if not mains_online and not batteries:
        return None
    discharging = any(b["status"] == "discharging" for b in batteries)
    source = "battery" if discharging or (mains_online and not any(mains_online)) else "mains"
    result: dict = {"source": source}
    if batteries:
        result["battery_percent"] = batteries[0]["percent"]
    return result


_PMSET_DRAW = re.compile(r"Now drawing from '([^']+)'")
_PMSET_PERCENT = re.compile(r"(\d+)%;")


def parse_pmset_batt(text: str) -> dict | None:
    """``pmset -g batt``: "Now drawing from 'AC Power'" or "'Battery Power'", and the charge."""
    drawn = _PMSET_DRAW.search(text)
    if not drawn:
        return None
    name = drawn.group(1).lower()
    source = "battery" if "battery" in name else "mains" if "ac" in name.split() else name[:32]
    result: dict = {"source": source}
    if percent := _PMSET_PERCENT.search(text):
        result["battery_percent"] = float(percent.group(1))
    return result


def run_tool(*argv: str) -> str | None:
    """A macOS tool's output, or None where it is absent or fails."""
    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def thermal(system: str) -> dict | None:
    if system == "Darwin":
        text = run_tool("pmset", "-g", "therm")
        return parse_pmset_therm(text) if text is not None else None
    return linux_thermal()


def power(system: str) -> dict | None:
    if system == "Darwin":
        text = run_tool("pmset", "-g", "batt")
        return parse_pmset_batt(text) if text else None
    return linux_power()
