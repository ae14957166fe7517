"""pdx's own cost: the wall of `pdx bench --backend llamacpp-bench` against the
same llama-bench command run directly, alternated, and the wall of `pdx --help`
with the modules it imports (target: pdx at most 1.1x llama-bench; --help
under 0.2 s on a quiet machine, nothing heavy imported).

    python tests/benchmarks/overhead.py [--model PATH] [-p 512] [-n 128] [-r 5] [--runs 3]

One untimed `pdx bench` comes first: it writes the synthetic model and probes the
machine if those are not cached yet, and gives the llama-bench command pdx runs
(its thread count, batch sizes and flags), which the direct call then repeats
with both tests in one process, as a user would type it. Runs go to a temporary
registry. The load average is printed at both ends: on a shared machine take
the figures as rough and rerun when it is quiet. With PDX_LLAMA_BENCH naming a
stand-in that does no engine work, the difference of the two walls is pdx's own
cost alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PDX = [sys.executable, "-m", "pdx"]
# Packages `pdx --help` should not need; each one imported is listed with its cost.
HEAVY = ("sqlalchemy", "alembic", "mako", "numpy", "jinja2", "rich", "gguf", "requests", "jsonschema",
         "tokenizers", "llama_cpp", "mlx", "vllm", "torch")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def direct_command(run: dict, n_prompt: int, n_gen: int) -> list[str]:
    """The llama-bench command pdx ran for its first test, with both tests' lengths in one call."""
    cmd = list(run["tests"][0]["engine"]["command"])
    for flag, value in (("-p", n_prompt), ("-n", n_gen)):
        cmd[cmd.index(flag) + 1] = str(value)
    return cmd


def help_imports(env: dict[str, str]) -> tuple[list[str], dict[str, float]]:
    """Top-level packages `pdx --help` imports, and the import time (s) of each heavy one: the sum of
    its modules' own times."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *PDX[1:], "--help"], env=env, check=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    packages, heavy = set(), {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, _, name = (part.strip() for part in line.split("|"))
        own = own.removeprefix("import time:").strip()
        if not own.isdigit():
            continue
        top = name.split(".")[0]
        packages.add(top)
        if top in HEAVY:
            heavy[top] = heavy.get(top, 0.0) + int(own) / 1e6
    return sorted(packages), heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a GGUF file [default: pdx's synthetic 100M model]")
    parser.add_argument("-p", "--n-prompt", type=int, default=512)
    parser.add_argument("-n", "--n-gen", type=int, default=128)
    parser.add_argument("-r", "--repetitions", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3, help="alternated pairs of calls")
    args = parser.parse_args()
    print(f"load average at start: {load()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = os.environ | {"PDX_REGISTRY": str(Path(tmp) / "registry.sqlite")}
        helps = [wall([*PDX, "--help"], env) for _ in range(5)]
        packages, heavy = help_imports(env)
        print(f"pdx --help    {statistics.median(helps):6.2f} s  (median of 5; target 0.2 s on a quiet machine)")
        print(f"pdx --help imports {len(packages)} top-level packages; heavy: "
              + (", ".join(f"{name} {s:.2f} s" for name, s in sorted(heavy.items(), key=lambda kv: -kv[1]))
                 or "none"), flush=True)
        bench = [*PDX, "bench", "--backend", "llamacpp-bench", "-p", str(args.n_prompt), "-n", str(args.n_gen),
                 "-r", str(args.repetitions)] + (["-m", args.model] if args.model else [])
        first = subprocess.run([*bench, "--json"], env=env, check=True, capture_output=True, text=True)
        direct = direct_command(json.loads(first.stdout)[0], args.n_prompt, args.n_gen)
        print(f"pdx:         {' '.join(bench[2:])}")
        print(f"llama-bench: {' '.join(direct)}", flush=True)
        pdx_walls, direct_walls = [], []
        for n in range(args.runs):
            pdx_walls.append(wall(bench, env))
            direct_walls.append(wall(direct, env))
            print(f"  pair {n + 1}: pdx {pdx_walls[-1]:.2f} s, llama-bench {direct_walls[-1]:.2f} s "
                  f"(load {load()})", flush=True)
    pdx_s, direct_s = statistics.median(pdx_walls), statistics.median(direct_walls)
    print(f"pdx bench     {pdx_s:6.2f} s  (median of {' '.join(f'{w:.2f}' for w in pdx_walls)})")
    print(f"llama-bench   {direct_s:6.2f} s  (median of {' '.join(f'{w:.2f}' for w in direct_walls)})")
    print(f"ratio         {pdx_s / direct_s:6.2f}x  (target 1.10x); pdx's own cost {pdx_s - direct_s:+.2f} s a call")
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
