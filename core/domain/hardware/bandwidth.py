"""STREAM-style memory bandwidth with the benchmark's thread count.

Each of N Python threads runs a kernel over its own slice of three float64
arrays (numpy releases the GIL inside each call, so the threads run in
parallel); the time is wall clock from a common start to the last thread's
end. Bytes are counted the STREAM way: what the kernel reads plus what it
writes, not the cache-line reads a store may cause. The best of several
repetitions is kept, after one untimed pass.

- copy:  a = b                  (2 arrays moved; numpy's memcpy)
- triad: a = b + s * c          (3 arrays; in cache-sized blocks so the
                                 temporary s * c stays in cache)
- read:  sum(b * c) (BLAS dot)  (2 arrays read, nothing written: what
                                 decode mostly does with weights)
"""

from __future__ import annotations

import threading
import time

import numpy as np

KERNELS = {"copy": 2, "triad": 3, "read": 2}  # arrays of traffic per element
_BLOCK = 1 << 16  # elements per triad block: 512 KiB, well inside L2


def _copy(a, b, c, lo, hi, tmp):
    np.copyto(a[lo:hi], b[lo:hi])


def _triad(a, b, c, lo, hi, tmp):
    for start in range(lo, hi, _BLOCK):
        end = min(start + _BLOCK, hi)
        part = tmp[: end - start]
        np.multiply(c[start:end], 3.0, out=part)
        np.add(b[start:end], part, out=a[start:end])


def _read(a, b, c, lo, hi, tmp):
    np.dot(b[lo:hi], c[lo:hi])


_FUNCS = {"copy": _copy, "triad": _triad, "read": _read}


def _timed(func, arrays, bounds) -> float:
    barrier = threading.Barrier(len(bounds) + 1)
    temps = [np.empty(_BLOCK) for _ in bounds]

    def work(lo, hi, tmp):
        barrier.wait()
        func(*arrays, lo, hi, tmp)

    threads = [threading.Thread(target=work, args=(lo, hi, tmp)) for (lo, hi), tmp in zip(bounds, temps)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def measure(threads: int, array_bytes: int, repetitions: int) -> dict:
    """Bytes/s of each kernel (best of ``repetitions``) and every repetition's figure."""
    n = max(_BLOCK, array_bytes // 8)
    arrays = (np.ones(n), np.full(n, 2.0), np.full(n, 0.5))  # touched now, so no page faults are timed
    bounds = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]
    result: dict = {"threads": threads, "array_bytes": n * 8, "repetitions": repetitions, "samples": {}}
    for name, func in _FUNCS.items():
        moved = KERNELS[name] * n * 8
        _timed(func, arrays, bounds)  # untimed pass
        rates = [moved / _timed(func, arrays, bounds) for _ in range(repetitions)]
        result[name] = max(rates)
        result["samples"][name] = rates
    best = max(KERNELS, key=lambda k: result[k])
    result |= {"best": result[best], "best_kernel": best}
    return result
