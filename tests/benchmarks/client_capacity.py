"""Where does one pdx client process stop timing honestly, and what do two processes add?

Method. A local server (tests/fake_openai_server.py, its own process) streams every request's tokens
on a known schedule, one every ``--itl`` seconds after ``--ttft``, and logs the moment it writes each
one (perf_counter_ns: CLOCK_MONOTONIC, one clock for every process of the machine). pdx's client
(:func:`pdx.measure.serving.load.run_load`, closed loop, every stream at once) records each token's arrival
from the kernel's receive stamp. For each number of streams, with the client in one process and then
split over two (each half the streams, started together):

- timing error: arrival minus the server's send, every token (p50, p99, max; loopback adds a few us);
- client CPU: each process's user + system time over its wall time, in cores of its one (its loop is
  one thread: near 1.0 it is saturated);
- kept up: tokens received per second against the schedule's (streams / itl); below 95% someone fell
  behind: the server says whether it was (its own sends against its schedule), else it was the client.

A configuration is within the client's capacity when its p99 error stays under 1 ms, it kept up, and no
process used 90% of its core (pdx.domain.serving.analysis' limits, which serve-bench's note applies). Printed:
a row per configuration and the largest within capacity for one and for two processes. The server is
one Python process too, so on a small machine it may be the first to give out: the rows say so, and the
client's limit is then at least the figure printed.

    python tests/benchmarks/client_capacity.py [--streams 64,128,256,512,1024] [--tokens 32] [--itl 0.02]
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

import requests

from pdx.domain.serving.analysis import CLIENT_CORES_LIMIT
from pdx.measure.serving.load import closed_loop, run_load
from pdx.domain.serving.metrics import percentile
from pdx.measure.serving.openai import CompletionsClient

SERVER = Path(__file__).resolve().parents[1] / "fake_openai_server.py"
ERROR_LIMIT_US = 1000.0
KEPT_UP = 0.95


def one_client(url: str, streams: int, tokens: int, first_key: int, start_ns: int) -> dict:
    """One client process's share: ``streams`` requests at once from ``start_ns`` (perf_counter)."""
    client = CompletionsClient(url, "fake", timeout_s=300)
    prompts = [[first_key + i, 5, 5, 5] for i in range(streams)]
    result = run_load(client, closed_loop(prompts, tokens), max_concurrency=streams, start_ns=start_ns)
    failed = [r.error for r in result.records if not r.ok]
    arrivals = {first_key + r.idx: [result.origin_ns + r.send_ns + t for t, _ in r.events] for r in result.records}
    return {"arrivals": arrivals, "cpu_s": result.cpu_s, "wall_s": result.wall_s, "failed": failed}


def _worker(args: tuple) -> dict:
    return one_client(*args)


def measure(url: str, streams: int, processes: int, tokens: int, first_key: int) -> list[dict]:
    start = time.perf_counter_ns() + 500_000_000  # every process ready before the load starts
    shares = [streams // processes + (1 if k < streams % processes else 0) for k in range(processes)]
    keys = [first_key + sum(shares[:k]) for k in range(processes)]
    if processes == 1:
        return [one_client(url, shares[0], tokens, keys[0], start)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return pool.map(_worker, [(url, shares[k], tokens, keys[k], start) for k in range(processes)])


def judge(parts: list[dict], sends: dict, streams: int, tokens: int, itl: float) -> dict:
    errors, first, last, server_late = [], None, None, []
    for part in parts:
        if part["failed"]:
            sys.exit(f"{len(part['failed'])} requests failed: {part['failed'][0]}")
        for key, times in part["arrivals"].items():
            sent = sends[str(key)]
            errors += [(a - s) / 1e3 for a, s in zip(times, sent)]
            first = min(first or sent[0], sent[0])
            last = max(last or times[-1], times[-1])
            server_late.append((sent[-1] - sent[0]) / 1e9 - (len(sent) - 1) * itl)  # its own schedule slipped by
    errors.sort()
    span = (last - first) / 1e9
    rate = streams * tokens / span if span > 0 else 0.0
    scheduled = streams / itl
    cores = max(p["cpu_s"] / p["wall_s"] for p in parts)
    kept_up = rate >= KEPT_UP * scheduled
    server_behind = max(server_late) > 0.05 * tokens * itl
    return {"p50": percentile(errors, 50), "p99": percentile(errors, 99), "max": errors[-1], "rate": rate,
            "scheduled": scheduled, "cores": cores, "kept_up": kept_up, "server_behind": server_behind,
            "within": percentile(errors, 99) < ERROR_LIMIT_US and kept_up and cores < CLIENT_CORES_LIMIT}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="64,128,256,512,1024")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--itl", type=float, default=0.02, help="seconds between a stream's tokens")
    parser.add_argument("--ttft", type=float, default=0.05)
    parser.add_argument("--processes", default="1,2")
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, str(SERVER), "--ttft", str(args.ttft), "--itl", str(args.itl)],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{int(server.stdout.readline().split()[1])}"
        print(f"{args.tokens} tokens a stream, one every {args.itl * 1e3:.0f} ms; limits: p99 error < "
              f"{ERROR_LIMIT_US:.0f} us, >= {KEPT_UP:.0%} of the schedule's tokens/s, < {CLIENT_CORES_LIMIT:.0%} of a "
              f"core")
        best: dict[int, tuple[int, float] | None] = {}
        key = 1_000_000
        for processes in [int(p) for p in args.processes.split(",")]:
            best[processes] = None
            for streams in [int(s) for s in args.streams.split(",")]:
                parts = measure(url, streams, processes, args.tokens, key)
                key += streams
                sends = requests.get(f"{url}/sends", timeout=60).json()
                j = judge(parts, sends, streams, args.tokens, args.itl)
                why = "within" if j["within"] else "past: " + ", ".join(
                    w for w, bad in (("error", j["p99"] >= ERROR_LIMIT_US), ("fell behind", not j["kept_up"]),
                                     ("CPU", j["cores"] >= CLIENT_CORES_LIMIT)) if bad)
                behind = " (the server fell behind its own schedule)" if j["server_behind"] else ""
                print(f"{processes} process{'es' if processes > 1 else '':2} {streams:5} streams: error p50 "
                      f"{j['p50']:8.1f} us p99 {j['p99']:8.1f} us max {j['max']:9.1f} us | {j['rate']:8.0f} of "
                      f"{j['scheduled']:6.0f} tokens/s | busiest client {j['cores']:.2f} cores | {why}{behind}")
                if j["within"]:
                    best[processes] = (streams, j["rate"])
        for processes, found in best.items():
            label = f"{processes} process{'es' if processes > 1 else ''}"
            print(f"{label}: " + (f"{found[0]} streams, {found[1]:.0f} tokens/s within the limits" if found
                                  else "no configuration tried was within the limits"))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
