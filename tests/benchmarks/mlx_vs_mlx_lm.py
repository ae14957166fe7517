"""pdx's MLX figures beside mlx-lm's own, on one model: pdx's clock, mlx-lm's
stream_generate as pdx records it, and the mlx_lm.benchmark command; then the
same shape on llama.cpp.

    python tests/benchmarks/mlx_vs_mlx_lm.py [--model synth:tiny:f32] [-p 128] [-n 32] [-r 5]

mlx-lm's prompt_tps includes sampling and launching the first decode step;
its generation_tps divides N tokens by N-1 steps. So expect its pp a little
below pdx's and its tg about N/(N-1) above (before noise).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile

from pdx import api
from pdx.domain.workload import build_workload


def mlx_lm_benchmark(path: str, p: int, n: int, trials: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-m", "mlx_lm.benchmark", "--model", path, "-p", str(p), "-g", str(n),
                          "-n", str(trials)], capture_output=True, text=True, check=True).stdout
    averages = next(line for line in out.splitlines() if line.startswith("Averages:"))
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", averages)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="synth:tiny:f32")
    parser.add_argument("-p", type=int, default=128)
    parser.add_argument("-n", type=int, default=32)
    parser.add_argument("-r", "--repetitions", type=int, default=5)
    args = parser.parse_args()
    workload = build_workload(n_prompt=str(args.p), n_gen=str(args.n), prompt_gen=f"{args.p},{args.n}",
                              repetitions=args.repetitions)
    with tempfile.TemporaryDirectory() as tmp:
        registry = api.open_registry(f"{tmp}/registry.sqlite")
        runs = [api.run_benchmark(api.BenchConfig(backend=b, model=args.model, workload=workload,
                                                  options={"mlx_lm_runs": str(args.repetitions)} if b == "mlx" else {}),
                                  registry) for b in ("mlx", "llamacpp")]
    mlx, llama = runs
    tool = mlx_lm_benchmark(mlx["model"]["path"], args.p, args.n, args.repetitions)
    print(f"model {mlx['model']['name']} ({mlx['model']['dtype']}), {args.repetitions} repetitions, "
          f"MLX {mlx['engine']['version']} on {mlx['engine']['settings']['device']}")
    print(f"{'test':>12} {'pdx mlx t/s':>14} {'mlx-lm own':>11} {'ratio':>6} {'llama.cpp t/s':>14}")
    for test, other in zip(mlx["tests"], llama["tests"]):
        ours, own = test["stats"]["rate"]["mean"], test["engine"].get("own_rates", {})
        theirs = own.get(test["kind"])  # a pp+tg test has two: printed below it
        ratio = f"{theirs / ours:6.3f}" if theirs and test["kind"] != "pg" else ""
        print(f"{test['name']:>12} {ours:>14.1f} {theirs or 0:>11.1f} {ratio:>6} "
              f"{other['stats']['rate']['mean']:>14.1f}")
        if test["kind"] == "pg":
            stats = test["stats"]
            print(f"{'  prefill':>12} {stats['prompt_rate']['mean']:>14.1f}   mlx_lm.benchmark prompt_tps "
                  f"{tool['prompt_tps']:.1f}")
            print(f"{'  decode':>12} {stats['gen_rate']['mean']:>14.1f}   mlx_lm.benchmark generation_tps "
                  f"{tool['generation_tps']:.1f}")


if __name__ == "__main__":
    main()
