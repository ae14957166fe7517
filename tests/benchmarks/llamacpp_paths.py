"""llama-bench vs in-process llama.cpp on the same model: prints each test's
rates and their ratio (target 0.98-1.02).

    python tests/benchmarks/llamacpp_paths.py [--model PATH] [-r 5]
"""

from __future__ import annotations

import argparse
import tempfile

from pdx import api
from pdx.domain.workload import build_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("-r", "--repetitions", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        registry = api.open_registry(f"{tmp}/registry.sqlite")
        workload = build_workload(n_prompt="512", n_gen="128", repetitions=args.repetitions)
        runs = {
            backend: api.run_benchmark(api.BenchConfig(backend=backend, model=args.model, workload=workload), registry)
            for backend in ("llamacpp-bench", "llamacpp-python")
        }
    bench, python = runs["llamacpp-bench"], runs["llamacpp-python"]
    print(f"model {bench['model']['name']}, {bench['threads']} threads, {args.repetitions} repetitions")
    print(f"{'test':>8} {'llama-bench t/s':>18} {'in-process t/s':>18} {'ratio':>7}")
    for b, p in zip(bench["tests"], python["tests"]):
        rb, rp = b["stats"]["rate"], p["stats"]["rate"]
        print(f"{b['name']:>8} {rb['mean']:>10.2f} ± {rb['ci95']:<6.2f} {rp['mean']:>10.2f} ± {rp['ci95']:<6.2f} "
              f"{rp['mean'] / rb['mean']:>7.3f}")


if __name__ == "__main__":
    main()
