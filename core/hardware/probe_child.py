"""Runs one probe in a fresh interpreter and prints its JSON result.

A separate process, because BLAS reads its thread count once, when numpy
loads: the parent sets OPENBLAS_NUM_THREADS (and friends) first.
``python -m pdx.hardware.probe_child bandwidth|matmul THREADS SIZE REPS``
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> None:
    kind, threads, size, reps = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    if kind == "bandwidth":
        from pdx.hardware import bandwidth

        result = bandwidth.measure(threads, size, reps)
    else:
        from pdx.hardware import matmul

        result = matmul.measure(size, reps)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
