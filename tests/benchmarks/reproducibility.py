"""Rerun agreement, adaptive repetitions and the regression gate on real llama.cpp:
prints each figure (the default ~100M model unless --model).

    python tests/benchmarks/reproducibility.py [--model PATH] [--cap 20]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace

from pdx import api
from pdx.reports.gate import check
from pdx.api.rerun import rerun_config
from pdx.domain.workload import build_workload


def rate(run: dict, name: str) -> dict:
    return next(t for t in run["tests"] if t["name"] == name)["stats"]["rate"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--cap", type=int, default=20, help="cap of the adaptive run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        registry = api.open_registry(f"{tmp}/registry.sqlite")
        base = api.BenchConfig(model=args.model, workload=build_workload(n_prompt="256", n_gen="32", repetitions=5))
        first = api.run_benchmark(replace(base, threads=1), registry)
        again = api.run_benchmark(rerun_config(first), registry)
        print(f"rerun (1 thread, 5 repetitions), linked: {again['parent_id'] == first['id']}")
        for name in ("pp256", "tg32"):
            old, new = rate(first, name), rate(again, name)
            print(f"  {name:>6}: first {old['mean']:8.2f} ± {old['ci95']:6.2f}, rerun {new['mean']:8.2f} "
                  f"({(new['mean'] / old['mean'] - 1):+.1%}; allowed ±{max(old['ci95'] / old['mean'], 0.1):.1%})")

        auto = build_workload(n_prompt="0", n_gen="128", repetitions=3, target_ci=0.02, max_repetitions=args.cap)
        started = time.perf_counter()
        run = api.run_benchmark(replace(base, threads=1, workload=auto, backend="llamacpp-bench"), registry)
        adaptive = run["tests"][0]["adaptive"]
        print(f"-r auto --target-ci 2% on tg128 (cap {args.cap}): {adaptive['repetitions']} repetitions in "
              f"{adaptive['calls']} calls, CI ±{adaptive['achieved_ci']:.2%}, stopped by {adaptive['stopped_by']}, "
              f"{time.perf_counter() - started:.0f} s")

        dual = api.run_benchmark(replace(base, threads=2), registry)
        for label, baseline, new in (("1 thread vs 2", dual, first), ("rerun vs first", first, again)):
            result = check(registry, baseline["id"], new["id"], factor=1.25)
            marks = ", ".join(f"{c.mark!r} {c.name} ratio {c.ratio:.2f} p {c.p_value:.4f}" for c in result.comparisons)
            print(f"check {label}: exit {1 if result.regressions else 0}: {marks}")


if __name__ == "__main__":
    main()
