"""Matrix-multiply FLOP/s through numpy's BLAS, with the benchmark's threads.

Why float32 GEMM: llama.cpp's CPU kernels for F32, F16 and BF16 weights
convert to float32 and multiply-add in float32 SIMD lanes, so the float32
multiply-add peak bounds them; numpy's own float16 matmul is a scalar loop,
not BLAS, and would understate the machine a hundredfold. Quantised weights
(Q8_0, Q4_0) run int8 dot products, which numpy cannot reach through BLAS:
for them the float32 figure is stored as a proxy and named so. The thread
count is fixed before numpy loads (OPENBLAS/OMP/MKL_NUM_THREADS) by the
probe's parent process.
"""

from __future__ import annotations

import time

import numpy as np


def blas_name() -> str:
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{info.get('name')} {info.get('version', '')}".strip()
    except Exception:  # older numpy has no dict mode; the name is then unknown, not fatal
        return "unknown"


def measure(n: int, repetitions: int, dtype: str = "float32") -> dict:
    """FLOP/s of an n x n x n GEMM (2 n^3 operations), best of ``repetitions``."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32).astype(dtype)
    b = rng.random((n, n), dtype=np.float32).astype(dtype)
    c = np.empty((n, n), dtype=dtype)
    np.matmul(a, b, out=c)  # untimed: BLAS starts its threads and packs buffers here
    rates = []
    for _ in range(repetitions):
        start = time.perf_counter()
        np.matmul(a, b, out=c)
        rates.append(2 * n**3 / (time.perf_counter() - start))
    return {"dtype": dtype, "n": n, "repetitions": repetitions, "flops": max(rates), "samples": rates,
            "blas": blas_name(), "numpy": np.__version__}
