"""How accurately does pdx's serving client time tokens at 256 concurrent streams?

A local server (tests/fake_openai_server.py, its own process) streams tokens on
a known schedule and logs the moment it sends each one; the client's recorded
arrival of every token is compared with that send time (both CLOCK_MONOTONIC,
so the error includes the loopback hop, a few microseconds). Printed: the
error's p50/p99/max and the client's CPU use, for pdx's client and, for
contrast, the obvious alternative (``requests`` with a thread per stream).

    python tests/benchmarks/serving_client_timing.py [--streams 256] [--tokens 64] [--itl 0.05]

Target: p99 < 1 ms for pdx's client.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests

from pdx.measure.serving.load import closed_loop, run_load
from pdx.domain.serving.metrics import percentile
from pdx.measure.serving.openai import CompletionsClient

SERVER = Path(__file__).resolve().parents[1] / "fake_openai_server.py"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pdx_arrivals(url: str, streams: int, tokens: int, first_key: int) -> tuple[dict[int, list[int]], float, float]:
    client = CompletionsClient(url, "fake", timeout_s=120)
    prompts = [[first_key + i, 5, 5, 5] for i in range(streams)]
    result = run_load(client, closed_loop(prompts, tokens), max_concurrency=streams)
    failed = [r.error for r in result.records if not r.ok]
    if failed:
        sys.exit(f"pdx client: {len(failed)} requests failed: {failed[0]}")
    arrivals = {first_key + r.idx: [result.origin_ns + r.send_ns + t for t, _ in r.events] for r in result.records}
    return arrivals, result.cpu_s, result.wall_s


def threaded_arrivals(url: str, streams: int, tokens: int, first_key: int) -> tuple[dict[int, list[int]], float, float]:
    """The alternative: requests + one thread per stream, stamping each line as it is read."""
    arrivals: dict[int, list[int]] = {}

    def one(key: int) -> None:
        times = arrivals.setdefault(key, [])
        body = {"model": "fake", "prompt": [key, 5, 5, 5], "max_tokens": tokens, "stream": True}
        with requests.post(f"{url}/v1/completions", json=body, stream=True, timeout=120) as response:
            for line in response.iter_lines():
                if line.startswith(b"data: {") and b'"token_ids"' in line:
                    times.append(time.perf_counter_ns())

    threads = [threading.Thread(target=one, args=(first_key + i,)) for i in range(streams)]
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return arrivals, cpu_seconds() - cpu0, time.perf_counter() - wall0


def errors_us(arrivals: dict[int, list[int]], sends: dict[str, list[int]]) -> list[float]:
    out = []
    for key, times in arrivals.items():
        sent = sends[str(key)]
        if len(sent) != len(times):
            sys.exit(f"stream {key}: {len(times)} arrivals for {len(sent)} sends")
        out += [(a - s) / 1e3 for a, s in zip(times, sent)]
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--itl", type=float, default=0.05, help="seconds between a stream's tokens")
    parser.add_argument("--ttft", type=float, default=0.1)
    parser.add_argument("--no-threads", action="store_true", help="skip the requests + threads comparison")
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, str(SERVER), "--ttft", str(args.ttft), "--itl", str(args.itl)],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{int(server.stdout.readline().split()[1])}"
        clients = [("pdx (selector loop, kernel stamps)", pdx_arrivals)]
        if not args.no_threads:
            clients.append(("requests, a thread per stream", threaded_arrivals))
        events = args.streams * args.tokens
        print(f"{args.streams} streams x {args.tokens} tokens, one every {args.itl * 1e3:.0f} ms "
              f"({events / (args.tokens * args.itl):.0f} tokens/s)")
        for n, (label, measure) in enumerate(clients):
            arrivals, cpu, wall = measure(url, args.streams, args.tokens, 100_000 * (n + 1))
            sends = requests.get(f"{url}/sends", timeout=30).json()
            err = errors_us(arrivals, sends)
            print(f"{label:38} timing error p50 {percentile(err, 50):8.1f} us  p99 {percentile(err, 99):8.1f} us  "
                  f"max {err[-1]:8.1f} us  mean {statistics.fmean(err):7.1f} us | client CPU {cpu:.2f} s "
                  f"in {wall:.2f} s ({100 * cpu / wall:.0f}% of a core, {1e6 * cpu / events:.0f} us per token)")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
