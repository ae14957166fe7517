"""The ~200M F16 model at 1 and 2 threads: each phase's two bounds from the
probes, the binding one, the rate measured and the fraction reached.

    python tests/benchmarks/ceilings_200m.py [--backend llamacpp] [-r 3] [--reprobe]
"""

from __future__ import annotations

import argparse
import tempfile

from pdx import api
from pdx.domain.synth import ensure_gguf
from pdx.domain.workload import build_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="llamacpp")
    parser.add_argument("-r", "--repetitions", type=int, default=3)
    parser.add_argument("--reprobe", action="store_true", help="measure the probes again first")
    args = parser.parse_args()
    model = str(ensure_gguf("200m", "f16"))
    workload = build_workload(n_prompt="512", n_gen="128", repetitions=args.repetitions)
    with tempfile.TemporaryDirectory() as tmp:
        registry = api.open_registry(f"{tmp}/registry.sqlite")
        for threads in (1, 2):
            config = api.BenchConfig(backend=args.backend, model=model, workload=workload, threads=threads,
                                     reprobe=args.reprobe)
            run = api.run_benchmark(config, registry)
            basis = run["ceiling_basis"]
            print(f"{threads} thread(s): {basis['bandwidth'] / 1e9:.1f} GB/s "
                  f"({basis['probe']['bandwidth']['best_kernel']}), "
                  f"{basis['flops'] / 1e9:.0f} GFLOP/s {basis['flops_dtype']}")
            for test in run["tests"]:
                c = test["ceilings"]
                (p,) = c["phases"].values()
                print(f"  {test['name']:7} {c['measured']:8.1f} t/s   memory bound {p['memory_bound']:9.1f}   "
                      f"compute bound {p['compute_bound']:9.1f}   -> {c['bound']}-bound, {c['fraction']:.0%} of "
                      f"ceiling")


if __name__ == "__main__":
    main()
