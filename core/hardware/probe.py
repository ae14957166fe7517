"""Probes: what this machine's memory and arithmetic actually deliver, at
the thread count a benchmark uses, so an uncatalogued machine still gets
ceilings.

Results are cached per machine and thread count (``pdx hw probe --force``
or ``pdx bench --reprobe`` measure again); each result carries its method,
so a stored run says how its ceilings were obtained.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from pdx.errors import PdxError
from pdx.paths import cache_dir

PROBE_VERSION = 1
ARRAY_BYTES = 256 * 2**20  # per array; three of them, far beyond any L3 a benchmark machine has
# Best of many short repetitions: on a shared machine the best one is the one that ran alone.
BANDWIDTH_REPS = 10
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
    cmd = [sys.executable, "-m", "pdx.hardware.probe_child", kind, str(threads), str(size), str(reps)]
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


def measure(machine: str, threads: int, force: bool = False, **sizes) -> dict:
    """The probe result for this machine and thread count, from the cache unless ``force``."""
    path = cache_path(machine, threads)
    if not force:
        try:
            return json.loads(path.read_text()) | {"cached": True, "cache_path": str(path)}
        except (OSError, ValueError):
            pass
    result = run(threads, **sizes) | {"machine": machine}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, path)
    return result | {"cached": False, "cache_path": str(path)}


def cached(machine: str, threads: int) -> dict | None:
    try:
        return json.loads(cache_path(machine, threads).read_text())
    except (OSError, ValueError):
        return None
