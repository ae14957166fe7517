"""Repeatability of the hardware probes: runs each probe three times (fresh,
uncached) at each thread count and prints every figure's spread, the
(max - min) / median of the three (target: within 10%), the conditions each
probe ran under, and for the bandwidth the repetitions a probe needs: each
repetition's figure of the best kernel, and the best of the first k as a
share of the best of all the probes' repetitions (the ceiling is a best-of-N:
the most the machine does, which a decode can reach but not pass).

    python tests/benchmarks/probe_spread.py [-t 1,2] [--runs 3] [--reps 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import statistics

from pdx.measure import ceiling_sources as sources
from pdx.measure.hardware import probe


def figures(result: dict) -> dict[str, float]:
    bw = result["bandwidth"]
    return {"copy B/s": bw["copy"], "triad B/s": bw["triad"], "read B/s": bw["read"], "best B/s": bw["best"],
            "f32 FLOP/s": result["matmul"]["f32"]["flops"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-t", "--threads", default="1,2")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reps", type=int, default=probe.BANDWIDTH_REPS, help="bandwidth repetitions per probe")
    args = parser.parse_args()
    os.environ["PDX_CACHE_DIR"] = tempfile.mkdtemp(prefix="pdx-probe-spread-")  # the user's cached probe stays
    worst = 0.0
    for threads in (int(t) for t in args.threads.split(",")):
        raw = [probe.measure("spread", threads, force=True, watch=sources.WATCH, bandwidth_reps=args.reps)
               for _ in range(args.runs)]
        results = [figures(r) for r in raw]
        print(f"{threads} thread(s), {args.runs} runs")
        best_of_all = max(r["bandwidth"]["best"] for r in raw)
        for index, result in enumerate(raw):
            bw = result["bandwidth"]
            samples = bw["samples"][bw["best_kernel"]]
            shares = [max(samples[:k]) / best_of_all for k in range(1, len(samples) + 1)]
            load = ", ".join(sources.load_notes(result)) or "quiet"
            print(f"  probe {index + 1} ({load}): {bw['best_kernel']} per repetition, GB/s: "
                  + " ".join(f"{v / 1e9:.2f}" for v in samples))
            print("    best of the first k, share of the best of all: "
                  + " ".join(f"{k}:{share:.1%}" for k, share in enumerate(shares, 1)))
        for name in results[0]:
            values = [r[name] for r in results]
            spread = (max(values) - min(values)) / statistics.median(values)
            worst = max(worst, spread)
            shown = "  ".join(f"{v / 1e9:8.2f}" for v in values)
            print(f"  {name:11} {shown}  G   spread {spread:6.1%} {'ok' if spread <= 0.10 else 'OVER 10%'}")
    print(f"worst spread {worst:.1%} (target 10%)")


if __name__ == "__main__":
    main()
