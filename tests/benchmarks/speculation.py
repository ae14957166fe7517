"""Speculative decoding on a real llama-server: the same synthetic target decoded (d) without
speculation, (a) with a draft of its own weights (greedy: every draft accepted, but each draft
token costs a pass of the target's size), and (c) with a small draft whose acceptance llama-server
sets (--spec-synth-len): few target passes and a draft of a tenth of the target's parameters, though
a synthetic draft keeps the target's whole vocabulary, whose output layer is most of a tiny model. For
each, the decode rate, what the server says it drafted and accepted, tokens per target pass, and
the rate against the plain (one token a pass) and the speculative ceiling.

    python tests/benchmarks/speculation.py [--shape 200m] [--draft-shape tiny] [-n 128] [-r 3]

Measured here (2 cores, while a CI run used them too: the rates are low, their order is what counts):

    case                                    tg t/s  drafted  accepted  tok/pass  plain ceil  spec ceil  of spec
    (d) none                                   8.1        0         0      1.00        94.1       94.1       9%
    (a) same weights                          19.0      306       306      4.78        94.1       82.5      23%
    (c) tiny draft, synth len 3                8.7      508       255      2.93        94.1      230.9       4%
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def pdx(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pdx", *args], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="200m")
    parser.add_argument("--draft-shape", default="tiny")
    parser.add_argument("--synth-len", default="3")
    parser.add_argument("-n", "--n-gen", default="128")
    parser.add_argument("-r", "--repetitions", default="3")
    parser.add_argument("-t", "--threads", default="2")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    target, draft = folder / "target.gguf", folder / "draft.gguf"
    pdx("model", "synth", "--shape", args.shape, "-o", str(target))
    vocab = json.loads(pdx("model", "shapes", "--json"))[args.shape]["n_vocab"]  # a draft shares the vocabulary
    pdx("model", "synth", "--shape", args.draft_shape, "--n-vocab", str(vocab), "--seed", "7", "-o", str(draft))
    url = f"sqlite:///{folder / 'r.sqlite'}"
    cases = {"(d) none": (), "(a) same weights": (f"draft_model={target}", "draft_max=4"),
             f"(c) {args.draft_shape} draft, synth len {args.synth_len}":
                 (f"draft_model={draft}", "draft_max=4", f"spec_synth_len={args.synth_len}")}
    print(f"target {args.shape}, {args.n_gen} tokens, {args.repetitions} repetitions, llama-server -t {args.threads}")
    print(f"{'case':36} {'tg t/s':>9} {'drafted':>8} {'accepted':>9} {'tok/pass':>9} {'plain ceil':>11} "
          f"{'spec ceil':>10} {'of spec':>8}")
    for name, options in cases.items():
        extra = [part for option in options for part in ("-o", option)]
        (run,) = json.loads(pdx("bench", "--backend", "llamacpp-server", "-m", str(target), "-p", "0", "-n",
                                args.n_gen, "-r", args.repetitions, "--threads", args.threads, "--registry", url,
                                "--json", *extra))
        run = json.loads(pdx("show", run["id"], "--registry", url, "--json"))
        (test,) = run["tests"]
        spec = test["stats"].get("speculation") or {}
        ceilings = test.get("ceilings") or {}
        counted = ((ceilings.get("phases") or {}).get("decode") or {}).get("speculative") or {}
        plain = counted.get("single_token_ceiling") or ceilings.get("ceiling")
        print(f"{name:36} {test['stats']['rate']['mean']:9.1f} {spec.get('drafted', 0):8} {spec.get('accepted', 0):9} "
              f"{spec.get('tokens_per_pass', 1.0):9.2f} {plain or 0:11.1f} {ceilings.get('ceiling') or 0:10.1f} "
              f"{(ceilings.get('fraction') or 0):8.0%}")


if __name__ == "__main__":
    main()
