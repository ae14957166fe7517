"""One llama-server, measured through its own /completion (llamacpp-server) and
through /v1/completions (the generic openai backend): prints each test's median
rate on both paths and their ratio (the same work, so a ratio near 1; on a
quiet 2-core machine 0.8-1.3 was seen, and a busy one moves it further).

    python tests/benchmarks/server_paths.py [--model PATH] [--rounds 2] [-r 3]

Without --model it writes the contract suite's streaming model (a wider
"tiny"). Rounds alternate the two backends so drift hits both; each run has a
seed of its own, so none meets prompts the server has cached.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from pdx import api
from pdx.plugins.llamacpp.locate import find_llama_server
from pdx.measure.serving.managed import ManagedServer, free_port
from pdx.domain.synth import get_shape, write_gguf
from pdx.testing.target import STREAMING_DIMS
from pdx.domain.workload import build_workload

BACKENDS = ("llamacpp-server", "openai")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("-r", "--repetitions", type=int, default=3)
    parser.add_argument("-p", "--n-prompt", default="64")
    parser.add_argument("-n", "--n-gen", default="32")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(write_gguf(get_shape("tiny").with_dims(**STREAMING_DIMS), "f16",
                                             Path(tmp) / "small.gguf"))
        port = free_port()
        command = [str(find_llama_server()), "-m", model, "--host", "127.0.0.1", "--port", str(port), "--metrics",
                   "-t", "1"]
        server = ManagedServer("llama-server", command, port, Path(tmp) / "server.log", startup_timeout_s=120)
        server.start()
        rates: dict[str, dict[str, list[float]]] = {b: {} for b in BACKENDS}
        try:
            registry = api.open_registry(f"sqlite:///{tmp}/registry.sqlite")
            seed = 1
            for _ in range(args.rounds):
                for backend in BACKENDS:
                    workload = build_workload(n_prompt=args.n_prompt, n_gen=args.n_gen, repetitions=args.repetitions,
                                              seed=seed)
                    seed += 1
                    run = api.run_benchmark(api.BenchConfig(backend=backend, workload=workload, threads=1,
                                                            options={"url": server.url}), registry)
                    for test in run["tests"]:
                        if test["status"] == "ok":
                            rates[backend].setdefault(test["name"], []).append(test["stats"]["rate"]["mean"])
                        else:
                            print(f"{backend} {test['name']}: {test['error']}")
        finally:
            server.stop()
    print(f"model {Path(model).name}, {args.rounds} rounds of {args.repetitions} repetitions, 1 server thread")
    print(f"{'test':>8} {'llamacpp-server t/s':>20} {'openai t/s':>12} {'ratio':>7}")
    for name in rates[BACKENDS[0]]:
        mine = statistics.median(rates[BACKENDS[0]][name])
        theirs = statistics.median(rates[BACKENDS[1]].get(name) or [float("nan")])
        print(f"{name:>8} {mine:>20.1f} {theirs:>12.1f} {theirs / mine:>7.2f}")


if __name__ == "__main__":
    main()
