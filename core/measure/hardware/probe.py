"""Probes: what this machine's memory and arithmetic actually deliver, at
the thread count a benchmark uses, so an uncatalogued machine still gets
ceilings.

Results are cached per machine and thread count (``pdx hw probe --force``
or ``pdx bench --reprobe`` measure again); each result carries its method,
so a stored run says how its ceilings were obtained.

Each result also carries the conditions it was measured under, read by a
:class:`Watch` the caller hands in (:mod:`pdx.measure.ceiling_sources` hands in
:mod:`pdx.measure.conditions`': other processes' CPU use and the load over the
probe's window; that package reads this one's parsers, so it is not
imported here). A probe taken under load measures less than the machine
does, so every ceiling from it is too low and a run reads ABOVE it. Such a
probe is still cached, marked, and kept only until a quiet one replaces it:
on a machine that is always busy it is the only measurement there is, and
measuring again at every ``pdx bench`` would cost seconds per call and meet
the same load. Every reader of it says so instead (``pdx hw``, the bench's
ceiling line, an ABOVE flag's explanation: :func:`pdx.measure.ceiling_sources.caveat`),
with the command that replaces it; a loaded probe never replaces a quiet
one that measured more.

Devices: ``cpu`` (numpy, below), ``mlx`` (MLX on the device it computes on:
``mlx:gpu`` is Metal, ``mlx:cpu`` MLX's CPU backend; plain ``mlx`` is the
GPU on an Apple Silicon Mac, else the CPU) and ``cuda`` (``cuda:N``,
through torch). A device probe's result has the CPU probe's keys
(``bandwidth.best``, ``matmul.f32``) plus a figure per data type, so the
ceilings read any of them the same way.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from typing import Callable, Protocol, TypeVar

from pdx.contract.errors import PdxError
from pdx.base.paths import cache_dir
from pdx.base.units import fmt_si

PROBE_VERSION = 1
ARRAY_BYTES = 256 * 2**20  # per array; three of them, far beyond any L3 a benchmark machine has
# Best of many short repetitions: on a shared machine the best one is the one that ran alone. A ceiling
# is "the most the machine does", so the best, never the median. Bandwidth repetitions are cheap (256 MiB
# arrays: 20 of each kernel take 1-3 s), and the best of 10 fell short: three probes on this 2-core machine
# beside 1.6 cores of other work reached 50%, 53% and 68% of their best repetition in their first 10, and
# 73%, 100% and 68% in 20 (tests/benchmarks/probe_spread.py --reps 20 prints this); a decode that then
# reads a few percent above the probed bandwidth is what too few repetitions give.
BANDWIDTH_REPS = 20
MATMUL_REPS = 10
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                     "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")

METHOD = {
    "bandwidth": "STREAM-style copy (a=b), triad (a=b+s*c) and read (dot(b,c)) over three float64 arrays, "
                 "split across the benchmark's thread count; bytes = read + written; best of the repetitions; "
                 "the ceiling uses the best kernel",
    "matmul": "n x n float32 GEMM through numpy's BLAS with OPENBLAS/OMP/MKL_NUM_THREADS = the benchmark's "
              "threads; 2 n^3 operations; best of the repetitions. llama.cpp's CPU kernels for F32/F16/BF16 "
              "weights multiply-add in float32 lanes; for quantised weights this is a proxy",
}


def matmul_size(threads: int) -> int:
    """Big enough that BLAS reaches its peak, small enough to take about a second."""
    return 2048 if threads <= 4 else 4096 if threads <= 32 else 6144


def cache_path(machine: str, threads: int) -> Path:
    return cache_dir("probes") / f"{machine}-t{threads}-v{PROBE_VERSION}.json"


def _child(kind: str, threads: int, size: int, reps: int) -> dict:
    blas_threads = str(threads if kind == "matmul" else 1)  # bandwidth threads are Python threads
    env = os.environ | {name: blas_threads for name in _THREAD_VARIABLES}
    return _run_child([kind, str(threads), str(size), str(reps)], kind, env)


def _run_child(args: list[str], kind: str, env: dict) -> dict:
    cmd = [sys.executable, "-m", "pdx.measure.hardware.probe_child", *args]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        raise PdxError(f"the {kind} probe took over 10 minutes", "give a smaller size or check the machine's load")
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise PdxError(f"the {kind} probe failed: {last}")
    return json.loads(out.stdout)


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def run(threads: int, array_bytes: int = ARRAY_BYTES, matmul_n: int | None = None,
        bandwidth_reps: int = BANDWIDTH_REPS, matmul_reps: int = MATMUL_REPS) -> dict:
    """Measure now (no cache): bandwidth and float32 GEMM FLOP/s at ``threads``."""
    if threads < 1:
        raise PdxError(f"probe threads must be at least 1, not {threads}")
    load_before = _load()
    bandwidth = _child("bandwidth", threads, array_bytes, bandwidth_reps)
    matmul = _child("matmul", threads, matmul_n or matmul_size(threads), matmul_reps)
    return {
        "version": PROBE_VERSION,
        "threads": threads,
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        # Other work on the machine lowers every figure; the load says how much there was.
        "load_average": {"before": load_before, "after": _load()},
        "bandwidth": bandwidth,
        "matmul": {"f32": matmul},
        "method": METHOD,
    }


# Device probes' default sizes: past any cache, a second or so per figure on the device.
DEVICE_SIZES = {
    "mlx:gpu": {"array_bytes": 512 * 2**20, "matmul_n": 4096, "reps": 10},
    "mlx:cpu": {"array_bytes": 128 * 2**20, "matmul_n": 256,
                "reps": 2},  # its float16 and quantised kernels are emulated: slow
    "cuda": {"array_bytes": 2 * 2**30, "matmul_n": 8192, "reps": 10},
}
# The device probes' matmul figures for each compute type of pdx.domain.ceilings, first found wins
# (int8: MLX's 8-bit quantised matmul, or CUDA's int8 GEMM).
DEVICE_MATMUL = {"fp32": ("f32",), "fp16": ("f16",), "bf16": ("bf16",), "int8": ("q8", "i8")}
_DEVICE_PACKAGES = {"mlx": ("mlx", "MLX", "pip install 'mlx-lm[cpu]' on Linux, 'mlx-lm' on a Mac"),
                    "cuda": ("torch", "torch", "install a CUDA build of torch (vLLM brings one)")}
# The load average (as a probe starts) past which its figures are suspect, for a probe whose window was
# too short to read other processes' CPU use, or one stored before probes kept their conditions: the load
# after a probe counts the probe's own threads, so only the one before is the machine's.
BUSY_LOAD = 0.5


Started = TypeVar("Started")


class Watch(Protocol[Started]):
    """What the machine did while a probe ran: its conditions (from what :meth:`start` read), and what
    they say against it."""

    def start(self) -> Started: ...

    def conditions(self, started: Started) -> dict: ...

    def notes(self, result: dict) -> list[str]: ...


def load_average_notes(result: dict) -> list[str]:
    """The load average as the probe started, where it reached ``BUSY_LOAD``: what a probe without
    readable conditions is judged by."""
    load = (result.get("load_average") or {}).get("before")
    return [f"load average {load:g} as it started"] if load is not None and load >= BUSY_LOAD else []


def device_name(device: str) -> str:
    """``cpu``, ``mlx:gpu``, ``mlx:cpu`` or ``cuda:N`` for what the user or a backend named."""
    kind, _, which = device.lower().partition(":")
    if kind == "cpu" and not which:
        return "cpu"
    if kind == "mlx" and which in ("", "gpu", "cpu"):
        apple = platform.system() == "Darwin" and platform.machine() == "arm64"
        return f"mlx:{which or ('gpu' if apple else 'cpu')}"
    if kind == "cuda" and (not which or which.isdigit()):
        return f"cuda:{which or 0}"
    raise PdxError(f"unknown probe device {device!r}", "give cpu, mlx (mlx:gpu, mlx:cpu) or cuda (cuda:N)")


def device_sizes(device: str, **given) -> dict:
    defaults = DEVICE_SIZES["cuda" if device.startswith("cuda") else device]
    return defaults | {k: v for k, v in given.items() if v is not None}


def device_cache_path(machine: str, device: str, threads: int, sizes: dict) -> Path:
    settings = hashlib.sha256(json.dumps(sizes, sort_keys=True).encode()).hexdigest()[:10]
    return cache_dir("probes") / f"{machine}-{device.replace(':', '')}-t{threads}-{settings}-v{PROBE_VERSION}.json"


def run_device(device: str, threads: int, **sizes) -> dict:
    """Measure now on ``device`` (mlx:gpu, mlx:cpu, cuda:N) in a child process."""
    kind, _, which = device.partition(":")
    _require_package(kind)
    sizes = device_sizes(device, **sizes)
    args = [which, str(sizes["array_bytes"]), str(sizes["matmul_n"]), str(sizes["reps"])]
    load_before = _load()
    result = _run_child([kind, *args], kind, os.environ | {name: str(threads) for name in _THREAD_VARIABLES})
    method = __import__(f"pdx.domain.hardware.{kind}_probe", fromlist=["METHOD"]).METHOD
    return {"version": PROBE_VERSION, "device": device, "threads": threads, "sizes": sizes,
            "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "load_average": {"before": load_before, "after": _load()}, **result,
            "method": method}


def _require_package(kind: str) -> None:
    """A device probe measures through its package: without it here, no figure (measured or cached
    by another environment's pdx) is this environment's."""
    package, label, hint = _DEVICE_PACKAGES[kind]
    if importlib.util.find_spec(package) is None:
        raise PdxError(f"{label} is not installed in this Python ({sys.executable}): the {kind} probe measures "
                       "through it", hint)


def headline_figures(result: dict) -> dict[str, float]:
    """The figures ceilings read from a probe: its best bandwidth and each matmul's FLOP/s."""
    figures = {"bandwidth": (result.get("bandwidth") or {}).get("best")}
    figures |= {f"matmul {key}": mm.get("flops") for key, mm in (result.get("matmul") or {}).items()}
    return {name: value for name, value in figures.items() if isinstance(value, (int, float))}


def _lower(new: dict, old: dict) -> dict[str, tuple[float, float]]:
    """The figures of ``new`` below ``old``'s: (new, old) by name."""
    before = headline_figures(old)
    return {name: (value, before[name]) for name, value in headline_figures(new).items()
            if name in before and value < before[name]}


def _measured(measure_now: Callable[[], dict], watch: Watch[Started] | None) -> dict:
    """A probe measured now, with the conditions ``watch`` read over it."""
    if watch is None:
        return measure_now()
    started = watch.start()
    result = measure_now()
    return result | {"conditions": watch.conditions(started)}


def _keep_or_store(path: Path, result: dict, watch: Watch[Started] | None) -> dict:
    """A forced probe's result stored in place of the cached one, unless the machine was busy and a
    figure came out lower: the cached one then stays in use, and the result says why (``kept_over``)."""
    loaded = watch.notes(result) if watch else load_average_notes(result)
    old = _cached(path) if loaded else None
    lower = _lower(result, old) if old else {}
    if not lower or old is None:
        return _store(path, result)
    said = ", ".join(f"{name} {_rate(name, new)} < {_rate(name, was)}" for name, (new, was) in lower.items())
    note = (f"measured again under load ({', '.join(loaded)}) and got less ({said}): kept the cached "
            f"probe of {old.get('measured_at', '?')}; measure again when the machine is quiet")
    return old | {"kept_over": {"measured_at": result["measured_at"], "load_average": result["load_average"],
                                "conditions": result.get("conditions"), "figures": headline_figures(result),
                                "note": note}}


def _rate(name: str, value: float) -> str:
    return fmt_si(value, "B/s" if name == "bandwidth" else "FLOP/s")


def _store(path: Path, result: dict) -> dict:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, path)
    return result | {"cached": False, "cache_path": str(path)}


def _cached(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text()) | {"cached": True, "cache_path": str(path)}
    except (OSError, ValueError):
        return None


def measure(machine: str, threads: int, force: bool = False, device: str = "cpu", watch: Watch[Started] | None = None,
            **sizes) -> dict:
    """The probe result for this machine, device and thread count, from the cache unless ``force``;
    measured with the conditions ``watch`` reads. A forced probe that ran on a busy machine (the
    watch's notes; without one, :func:`load_average_notes`) and measured any figure lower than the
    cached probe's does not replace it: the cached one is returned, the new one's figures beside it
    (``kept_over``). A device probe needs its package here, cached or not."""
    device = device_name(device)
    if device != "cpu":
        _require_package(device.partition(":")[0])
        chosen = device_sizes(device, **sizes)
        path = device_cache_path(machine, device, threads, chosen)
        hit = None if force else _cached(path)
        result = hit or _measured(lambda: run_device(device, threads, **chosen), watch) | {"machine": machine}
    else:
        path = cache_path(machine, threads)
        hit = None if force else _cached(path)
        result = hit or _measured(lambda: run(threads, **sizes), watch) | {"machine": machine}
    return hit or _keep_or_store(path, result, watch)


def cached(machine: str, threads: int) -> dict | None:
    try:
        return json.loads(cache_path(machine, threads).read_text())
    except (OSError, ValueError):
        return None


def cached_device(machine: str, device: str, threads: int) -> dict | None:
    """A device probe cached at its default sizes (what ``pdx hw probe --device`` stores), or None."""
    return _cached(device_cache_path(machine, device, threads, device_sizes(device)))
