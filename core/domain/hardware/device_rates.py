"""What the device probes (MLX, CUDA) make of their timings, in one shape for every device."""

from __future__ import annotations


def bandwidth_record(moved: dict[str, int], seconds: dict[str, list[float]], array_bytes: int, reps: int) -> dict:
    """Each kernel's best rate (bytes moved per second) with every sample, and which kernel was fastest."""
    record: dict = {"array_bytes": array_bytes, "repetitions": reps, "samples": {}}
    for name, times in seconds.items():
        rates = [moved[name] / t for t in times]
        record[name], record["samples"][name] = max(rates), rates
    best = max(seconds, key=lambda k: record[k])
    return record | {"best": record[best], "best_kernel": best}
