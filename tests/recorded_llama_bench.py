"""A stand-in for the ``llama-bench`` binary that replays recorded output: each call prints,
verbatim, the next recorded JSONL line of the test asked for (``-p``, ``-n``, ``-d``), and fails
unless ``-r`` asks for as many repetitions as that line holds.

The recording is tests/data/llama_bench_tiny.jsonl (the real llama-bench, see tests/data/README.md):
two lines per test, its 1-thread and its 2-thread run. Replayed to the llamacpp-bench driver's
adaptive rounds (3 repetitions, then 3 more), a test's samples come from two llama-bench calls
with two different ``avg_ts``, as they do on a real machine whose speed drifts between calls.

Usage (the shim a test writes runs it): ``python recorded_llama_bench.py STATE_DIR ARGS...``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RECORDING = Path(__file__).with_name("data") / "llama_bench_tiny.jsonl"
VERSION = "version: 0.5.0-dev (build 1, commit 0c1e570)\nbuilt with GNU 12.2.0 for Linux x86_64"


def _value(args: list[str], flag: str, default: str) -> str:
    return args[args.index(flag) + 1] if flag in args else default


def main(state: Path, args: list[str]) -> int:
    if "--version" in args:
        print(VERSION, file=sys.stderr)
        return 0
    key = tuple(int(_value(args, flag, "0")) for flag in ("-p", "-n", "-d"))
    lines = [line for line in RECORDING.read_text().splitlines()
             if tuple(json.loads(line)[k] for k in ("n_prompt", "n_gen", "n_depth")) == key]
    served = state / "p{}-n{}-d{}".format(*key)
    calls = int(served.read_text()) if served.exists() else 0
    if calls >= len(lines):
        print(f"error: the recording holds {len(lines)} call(s) of -p {key[0]} -n {key[1]} -d {key[2]}",
              file=sys.stderr)
        return 1
    repetitions = len(json.loads(lines[calls])["samples_ns"])
    if int(_value(args, "-r", "5")) != repetitions:
        print(f"error: -r {_value(args, '-r', '5')}: recorded call {calls} holds {repetitions} repetitions",
              file=sys.stderr)
        return 1
    served.write_text(str(calls + 1))
    print(lines[calls])
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
