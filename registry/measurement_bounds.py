"""What no honest record holds in a test's other measurements: speculation counts, energy, the
machine's conditions and the client processes of a serving test.

Rates and dates are :mod:`pdx.registry.plausibility`'s; these are the same kind of check, held to
counting and physics, run by the one record check (:mod:`pdx.registry.validate`) on every write
(bench, import, pull) and by ``pdx hub verify``:

- speculation (a sample's ``engine.speculation`` and a request's ``engine.timings``): counts are whole
  and non-negative, and a pass accepts no more than was drafted (0 <= accepted <= drafted) nor more
  than the tokens it counted;
- energy: a known version; every meter its joules (and idle watts) name is one its ``meters`` list;
  joules finite, and zero or at least :data:`MIN_JOULES`; a meter's mean power over the timed window,
  and its idle power, within :data:`MAX_WATTS` for what it covers;
- conditions: cores used (by pdx, by others, stolen) no more than the machine's CPUs, and those no more
  than :data:`MAX_CPUS`; clocks within :data:`MAX_CPU_MHZ` (a CPU) and :data:`MAX_GPU_MHZ` (a GPU's SM
  and memory); temperatures between absolute zero and :data:`MAX_CELSIUS`; a GPU's power and power limit
  within a board's :data:`MAX_WATTS`; a battery's charge 0 to 100%;
- clients (a sample's ``engine.clients``, ``serve-bench --clients N``): at most
  :data:`pdx.domain.serving.spec.MAX_CLIENTS` records, numbered 0 to N - 1 once each; whole request counts;
  a client's CPU no more than :data:`MAX_CPUS` cores, its lateness and clock uncertainty finite and
  not negative; and every request's ``shard`` one of the test's clients.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, TypeGuard

from pdx.domain.energy.figures import ENERGY_VERSION
from pdx.domain.serving.spec import MAX_CLIENTS

# The most a meter of each kind can draw, in watts: the largest part of that kind shipped, with
# headroom for what is not yet (each x 1.5 or more). Sources: NVIDIA's B200/B300 board up to 1,400 W
# and AMD's MI355X 1,400 W (vendor data sheets); AMD EPYC 9965 a 500 W TDP; DDR5 at ~10 W per DIMM,
# 24 DIMMs; Apple's M3 Ultra Mac Studio 480 W continuous for the whole machine; NVIDIA DGX B200 14.3 kW.
MAX_WATTS: dict[str, float] = {
    "gpu board": 2_500.0,
    "cpu package": 1_000.0,
    "dram": 500.0,
    "soc cpu": 500.0,
    "soc gpu": 500.0,
    "soc ane": 500.0,
    "soc dram": 500.0,
    "machine": 25_000.0,
}
# The most logical CPUs one machine's OS can see: Linux's largest build (CONFIG_NR_CPUS, 8,192 with
# MAXSMP on x86-64); the largest machines shipped (an 8-socket, 1,920-thread Xeon 6) are well below it.
MAX_CPUS = 8_192
# A CPU core's clock: the fastest shipped boosts to 6.2 GHz (Intel Core i9-14900KS), the overclocking
# record under liquid helium is 9.1 GHz (i9-14900KF, 2024): 10 GHz bounds every reading.
MAX_CPU_MHZ = 10_000.0
# A GPU's SM or memory clock as the driver gives it: nvidia-smi reports GDDR7's memory clock at
# 14,001 MHz on an RTX 5090 (GDDR6X 10,501 on an RTX 4090), SM clocks stay under 3.5 GHz: 40 GHz bounds both.
MAX_GPU_MHZ = 40_000.0
# A temperature any part reports while it works: lead-free solder (SAC305) melts at 217-220 C, so a
# board above 250 C has come apart; nothing is below absolute zero.
MAX_CELSIUS = 250.0
MIN_CELSIUS = -273.15
# Below any meter's step (RAPL counts 15-61 microjoules, NVML millijoules): a reading this small is
# no reading; zero is (a meter that did not tick in a short window).
MIN_JOULES = 1e-6


def _whole(value: object) -> TypeGuard[int]:
    return value.__class__ is int and value >= 0


def _counts_problem(drafted: object, accepted: object, tokens: object, names: tuple[str, str, str]) -> str | None:
    for value, name in zip((drafted, accepted, tokens), names):
        if value is not None and not _whole(value):
            return f"{name} {value!r} is not a whole number of tokens at least 0"
    if _whole(drafted) and _whole(accepted) and accepted > drafted:
        return f"{names[1]} {accepted} is more than {names[0]} {drafted}: a pass accepts only drafted tokens"
    if _whole(tokens) and _whole(accepted) and accepted > tokens:
        return f"{names[1]} {accepted} is more than the {tokens} output tokens counted ({names[2]})"
    return None


def speculation_problem(test: Mapping[str, Any]) -> tuple[str, str] | None:
    """(where in the test, why) for the first impossible speculation count; None when all are possible."""
    for i, sample in enumerate(test.get("samples") or ()):
        counts = (sample.get("engine") or {}).get("speculation") if isinstance(sample, dict) else None
        if isinstance(sample, dict) and isinstance(sample.get("engine"), dict) and "speculation" in sample["engine"]:
            if not isinstance(counts, dict):
                return f".samples[{i}].engine.speculation", f"{counts!r} is not an object of counts"
            problem = _counts_problem(counts.get("drafted"), counts.get("accepted"), counts.get("tokens"),
                                      ("drafted", "accepted", "tokens"))
            if problem:
                return f".samples[{i}].engine.speculation", problem
    for i, request in enumerate(test.get("requests") or ()):
        engine = request.get("engine") if isinstance(request, dict) else None
        timings = engine.get("timings") if isinstance(engine, dict) else None
        if isinstance(timings, dict) and "draft_n" in timings:
            problem = _counts_problem(timings.get("draft_n"), timings.get("draft_n_accepted"),
                                      timings.get("predicted_n"), ("draft_n", "draft_n_accepted", "predicted_n"))
            if problem:
                return f".requests[{i}].engine.timings", problem
    return None


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def energy_problem(test: Mapping[str, Any]) -> tuple[str, str] | None:
    """(where in the test, why) for the first impossible figure of a test's energy; None when it could be."""
    energy = test.get("energy")
    if not isinstance(energy, dict):
        return None  # absent or null: measured without energy; a wrong type is the schema's
    version = energy.get("version")
    if version.__class__ is not int or not 1 <= version <= ENERGY_VERSION:
        return ".energy.version", f"{version!r} is no energy record version this pdx knows (1 to {ENERGY_VERSION})"
    covers = {m.get("name"): m.get("covers") for m in energy.get("meters") or () if isinstance(m, dict)}
    timed = energy.get("timed_s")
    for key in ("joules", "idle_watts"):
        figures = energy.get(key) or {}
        if not isinstance(figures, dict):
            continue
        for name, value in figures.items():
            where = f".energy.{key}[{name!r}]"
            if name not in covers:
                listed = ", ".join(map(repr, covers)) or "none"
                return where, f"names meter {name!r}, which the meters list does not ({listed})"
            if not _number(value) or not math.isfinite(value) or value < 0:
                return where, f"{value!r} is not a finite figure at least 0"
            meter = covers[name]
            limit = MAX_WATTS.get(meter) if isinstance(meter, str) else None  # a list there: no TypeError
            if key == "joules":
                if 0 < value < MIN_JOULES:
                    return where, f"{value!r} J is below any meter's step ({MIN_JOULES:g} J)"
                if limit and _number(timed) and timed > 0 and value / timed > limit:
                    return where, (f"{value:.4g} J over {timed:.4g} s is {value / timed:.4g} W, more than a "
                                   f"{covers[name]} can draw ({limit:g} W)")
            elif limit and value > limit:
                return where, f"{value:.4g} W idle is more than a {covers[name]} can draw ({limit:g} W)"
    return None


def _finite(value: object, low: float, high: float) -> bool:
    return _number(value) and math.isfinite(value) and low <= value <= high


def _bounded(block: object, where: str, limits: Mapping[str, tuple[float, float, str]]) -> tuple[str, str] | None:
    """The first of ``block``'s figures outside its (low, high, what it is) limit; null or absent passes."""
    if not isinstance(block, dict):
        return None
    for key, (low, high, what) in limits.items():
        value = block.get(key)
        if value is not None and not _finite(value, low, high):
            return f"{where}.{key}", f"{value!r} is not {what} (from {low:g} to {high:g})"
    return None


_CELSIUS = (MIN_CELSIUS, MAX_CELSIUS, "a temperature a working part reports, in C")
_GPU = {"sm_mhz": (0, MAX_GPU_MHZ, "a GPU clock in MHz"), "max_sm_mhz": (0, MAX_GPU_MHZ, "a GPU clock in MHz"),
        "memory_mhz": (0, MAX_GPU_MHZ, "a GPU clock in MHz"), "max_memory_mhz": (0, MAX_GPU_MHZ, "a GPU clock in MHz"),
        "celsius": _CELSIUS, "power_w": (0, MAX_WATTS["gpu board"], "a GPU board's power in W"),
        "power_limit_w": (0, MAX_WATTS["gpu board"], "a GPU board's power limit in W")}
_CPU_MHZ = {key: (0, MAX_CPU_MHZ, "a CPU clock in MHz") for key in ("mhz", "min_mhz", "high_mhz", "max_mhz")}


def conditions_problem(test: Mapping[str, Any]) -> tuple[str, str] | None:
    """(where in the test, why) for the first figure of a test's conditions no machine gives; None else."""
    conditions = test.get("conditions")
    if not isinstance(conditions, dict):
        return None  # not recorded; a wrong type is the schema's
    cpus = conditions.get("cpu_count")
    if cpus is not None and not (cpus.__class__ is int and 1 <= cpus <= MAX_CPUS):
        return ".conditions.cpu_count", f"{cpus!r} is not a machine's number of CPUs (1 to {MAX_CPUS})"
    # Cores are measured as CPU time over the window: a little over the count is timer slack, not more cores.
    cores = (0, (cpus or MAX_CPUS) * 1.05 + 0.5, f"cores of the machine's {cpus or MAX_CPUS} CPUs")
    used = ("other_cpu_cores", "own_cpu_cores", "steal_cores")
    found = _bounded(conditions, ".conditions", dict.fromkeys(used, cores))
    found = found or _bounded(conditions.get("frequency"), ".conditions.frequency", _CPU_MHZ)
    found = found or _bounded(conditions.get("power"), ".conditions.power",
                              {"battery_percent": (0, 100, "a battery's charge in %")})
    thermal = conditions.get("thermal")
    if isinstance(thermal, dict):
        found = found or _bounded(thermal, ".conditions.thermal", {"max_celsius": _CELSIUS})
        for i, zone in enumerate(thermal.get("zones") or ()):
            found = found or _bounded(zone, f".conditions.thermal.zones[{i}]", {"celsius": _CELSIUS})
    gpu = conditions.get("gpu")
    for i, device in enumerate((gpu.get("devices") or ()) if isinstance(gpu, dict) else ()):
        for when in ("start", "end"):
            if isinstance(device, dict):
                found = found or _bounded(device.get(when), f".conditions.gpu.devices[{i}].{when}", _GPU)
    return found


_CLIENT = {"cores": (0, MAX_CPUS, "a client process's CPU in cores"),
           "cpu_s": (0, math.inf, "a client process's CPU time in s"),
           "late_p99_ms": (0, math.inf, "how late a client's timers ran, in ms"),
           "offset_uncertainty_ns": (0, math.inf, "a clock offset's uncertainty in ns")}


def clients_problem(test: Mapping[str, Any]) -> tuple[str, str] | None:
    """(where in the test, why) for the first impossible record of a serving test's client processes (and
    of a request's shard, which names one); None when all could be."""
    shards: set[int] = set()
    for i, sample in enumerate(test.get("samples") or ()):
        engine = sample.get("engine") if isinstance(sample, dict) else None
        clients = engine.get("clients") if isinstance(engine, dict) else None
        if clients is None:
            continue
        where = f".samples[{i}].engine.clients"
        if not isinstance(clients, list) or len(clients) > MAX_CLIENTS:
            size = f"{len(clients)} client records" if isinstance(clients, list) else repr(clients)[:40]
            return where, f"{size} is not a list of 1 to {MAX_CLIENTS} client processes"
        numbers = [c.get("shard") if isinstance(c, dict) else c for c in clients]
        if sorted(map(repr, numbers)) != sorted(map(repr, range(len(clients)))):
            return where, (f"numbers its clients {numbers[:8]!r}: {len(clients)} clients are numbered 0 to "
                           f"{len(clients) - 1} once each")
        shards |= set(range(len(clients)))
        for k, client in enumerate(clients):
            count = client.get("requests")
            if count is not None and not _whole(count):
                return f"{where}[{k}].requests", f"{count!r} is not a whole number of requests at least 0"
            found = _bounded(client, f"{where}[{k}]", _CLIENT)
            if found:
                return found
    for i, request in enumerate(test.get("requests") or ()):
        shard = request.get("shard") if isinstance(request, dict) else None
        if shard is not None and shards and shard not in shards:
            return f".requests[{i}].shard", f"{shard!r} names no client of the test (0 to {max(shards)})"
    return None


def measurement_problem(test: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first impossible speculation count, energy figure, condition or client record of a test, or None."""
    return speculation_problem(test) or energy_problem(test) or conditions_problem(test) or clients_problem(test)
