"""Runs one probe in a fresh interpreter and prints its JSON result.

A separate process, because BLAS reads its thread count once, when numpy
loads: the parent sets OPENBLAS_NUM_THREADS (and friends) first.
``python -m pdx.measure.hardware.probe_child bandwidth|matmul THREADS SIZE REPS``, or
``python -m pdx.measure.hardware.probe_child mlx|cuda DEVICE ARRAY_BYTES MATMUL_N REPS``
"""

from __future__ import annotations

import json
import sys

from pdx.domain.hardware import bandwidth, matmul


def main(argv: list[str]) -> None:
    kind = argv[0]
    if kind in ("mlx", "cuda"):  # DEVICE ARRAY_BYTES MATMUL_N REPS
        from importlib import import_module

        probe = import_module(f"pdx.domain.hardware.{kind}_probe")
        which = argv[1] if kind == "mlx" else int(argv[1] or 0)
        print(json.dumps(probe.measure(which, int(argv[2]), int(argv[3]), int(argv[4]))))
        return
    threads, size, reps = int(argv[1]), int(argv[2]), int(argv[3])
    if kind == "bandwidth":
        result = bandwidth.measure(threads, size, reps)
    else:
        result = matmul.measure(size, reps)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
