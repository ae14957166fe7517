"""pdx's serving client against vLLM's own ``vllm bench serve``, on the same server.

Both send the same number of requests of the same token counts at the same
concurrency to one ``vllm serve`` (started here on a synthetic model, or
``--url``), in alternating rounds; printed: the medians of TTFT, ITL and TPOT
by each, and pdx / vllm. Target: within 5% (aim 2%).

    python tests/benchmarks/vllm_vs_bench_serve.py [--shape 100m] [--concurrency 4] [--rounds 2]

Needs vLLM in this Python (``tox -e vllm`` runs it after the tests).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pdx.domain.models import identify
from pdx.plugins.vllm.locate import engine_env, vllm_command
from pdx.domain.prompt_stream import PromptStream
from pdx.measure.serving.backend import served_models
from pdx.measure.serving.load import Planned, closed_loop, run_load
from pdx.measure.serving.managed import ManagedServer, free_port
from pdx.domain.serving.metrics import serving_stats
from pdx.measure.serving.openai import CompletionsClient, OpenAICompletions
from pdx.domain.serving.prompts import PromptMaker
from pdx.domain.synth import ensure_hf

METRICS = ("ttft", "itl", "tpot")


class SameAsBenchServe(OpenAICompletions):
    """The prompt as text, as vllm bench serve sends it, so the server does the same work (tokenizing
    costs it a few ms of TTFT). Exact for pdx's synthetic models, whose tokenizer maps ``tN`` to id N."""

    def body(self, model: str, prompt: list[int], max_tokens: int) -> dict:
        return super().body(model, prompt, max_tokens) | {"prompt": " ".join(f"t{i}" for i in prompt)}


def pdx_round(url: str, model: str, n_vocab: int, args, seed: int) -> dict:
    # Without return_token_ids, as vllm bench serve asks: the same work for the server per event
    # (pdx then counts one token per event and checks the total against the server's usage).
    synthetic = (Path(model) / "config.json").exists() and identify(model).synthetic
    client = CompletionsClient(url, model, dialect=SameAsBenchServe() if synthetic else None)
    prompts = PromptMaker(PromptStream(seed, n_vocab), f"round-{seed}")
    result = run_load(client, closed_loop(prompts.many(args.num_prompts, args.input_len), args.output_len),
                      max_concurrency=args.concurrency, warmup=[Planned(prompts.tokens(args.input_len), 4)])
    stats = serving_stats(result.records, result.makespan_ns)
    if stats["failed"]:
        sys.exit(f"pdx: {stats['failed']} requests failed: {next(r.error for r in result.records if not r.ok)}")
    return {m: stats[f"{m}_ms"]["median"] for m in METRICS} | {"input_tokens": stats["prompt_tokens"],
                                                                "output_tokens": stats["output_tokens"]}


def bench_serve_round(url: str, model: str, args, seed: int, folder: Path) -> dict:
    out = folder / f"bench-{seed}.json"
    command = [*vllm_command(), "bench", "serve", "--backend", "vllm", "--base-url", url, "--model", model,
               "--tokenizer", model, "--dataset-name", "random", "--random-input-len", str(args.input_len),
               "--random-output-len", str(args.output_len), "--random-range-ratio", "0",
               "--num-prompts", str(args.num_prompts), "--max-concurrency", str(args.concurrency),
               "--ignore-eos", "--temperature", "0", "--seed", str(seed), "--disable-tqdm",
               "--percentile-metrics", "ttft,tpot,itl,e2el", "--save-result", "--result-dir", str(folder),
               "--result-filename", out.name]
    done = subprocess.run(command, capture_output=True, text=True, env=engine_env())
    if done.returncode != 0:
        sys.exit(f"vllm bench serve failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    data = json.loads(out.read_text())
    return {m: data[f"median_{m}_ms"] for m in METRICS} | {"input_tokens": data.get("total_input_tokens"),
                                                           "output_tokens": data.get("total_output_tokens")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running vllm serve (else one is started)")
    parser.add_argument("--shape", default="100m", help="synthetic model shape when starting a server")
    parser.add_argument("--server-args", default="--enforce-eager --max-model-len 2048")
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=32)
    parser.add_argument("--num-prompts", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pdx-vs-bench-") as tmp:
        server = None
        url = args.url
        if not url:
            path = ensure_hf(args.shape, "float16")
            port = free_port()
            command = [*vllm_command(), "serve", str(path), "--host", "127.0.0.1", "--port", str(port),
                       *args.server_args.split()]
            server = ManagedServer("vllm serve", command, port, Path(tmp) / "server.log", engine_env(), 900)
            server.start()
            url = server.url
        try:
            model = served_models(url, os.environ.get("PDX_API_KEY"))[0]["id"]
            n_vocab = identify(model).n_vocab if (Path(model) / "config.json").exists() else None
            rounds = {"pdx": [], "vllm bench serve": []}
            for r in range(args.rounds):  # alternating which goes first, so drift favours neither
                order = [("pdx", lambda: pdx_round(url, model, n_vocab, args, seed=r)),
                         ("vllm bench serve", lambda: bench_serve_round(url, model, args, r, Path(tmp)))]
                for name, measure in order[::1 if r % 2 == 0 else -1]:
                    rounds[name].append(measure())
        finally:
            if server:
                server.stop()
    pdx, bench = ({m: statistics.median(x[m] for x in rounds[k]) for m in METRICS} for k in rounds)
    print(f"{args.rounds} rounds each of {args.num_prompts} requests, {args.input_len} in / {args.output_len} out "
          f"tokens, concurrency {args.concurrency}; tokens sent/received: pdx {rounds['pdx'][0]['input_tokens']}/"
          f"{rounds['pdx'][0]['output_tokens']}, vllm bench serve {rounds['vllm bench serve'][0]['input_tokens']}/"
          f"{rounds['vllm bench serve'][0]['output_tokens']}")
    for name, results in rounds.items():
        print(f"  {name:17} per round: " + "; ".join(
            ", ".join(f"{m} {x[m]:.1f}" for m in METRICS) for x in results))
    print(f"{'median (ms)':12} {'pdx':>10} {'vllm bench':>11} {'pdx/vllm':>9}")
    for m in METRICS:
        ratio = pdx[m] / bench[m] if bench[m] else float("nan")
        print(f"{m.upper():12} {pdx[m]:10.2f} {bench[m]:11.2f} {ratio:9.3f}")


if __name__ == "__main__":
    main()
