"""Repeatability of the hardware probes: runs each probe three times (fresh,
uncached) at each thread count and prints every figure's spread, the
(max - min) / median of the three (target: within 10%).

    python tests/benchmarks/probe_spread.py [-t 1,2] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics

from pdx.hardware import probe


def figures(result: dict) -> dict[str, float]:
    bw = result["bandwidth"]
    return {"copy B/s": bw["copy"], "triad B/s": bw["triad"], "read B/s": bw["read"], "best B/s": bw["best"],
            "f32 FLOP/s": result["matmul"]["f32"]["flops"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-t", "--threads", default="1,2")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    worst = 0.0
    for threads in (int(t) for t in args.threads.split(",")):
        results = [figures(probe.run(threads)) for _ in range(args.runs)]
        print(f"{threads} thread(s), {args.runs} runs")
        for name in results[0]:
            values = [r[name] for r in results]
            spread = (max(values) - min(values)) / statistics.median(values)
            worst = max(worst, spread)
            shown = "  ".join(f"{v / 1e9:8.2f}" for v in values)
            print(f"  {name:11} {shown}  G   spread {spread:6.1%} {'ok' if spread <= 0.10 else 'OVER 10%'}")
    print(f"worst spread {worst:.1%} (target 10%)")


if __name__ == "__main__":
    main()
