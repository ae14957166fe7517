"""What pdx's streaming client costs the server it measures: one llama-server,
its decode rate as the server itself counts it (Δ tokens predicted / Δ seconds
predicting, from /metrics around each request), for the same request sent

- unstreamed (one JSON answer: the server's rate with no client reading),
- streamed to curl (a client that costs next to nothing), with pdx's request
  body and with a plain text-streaming body (what the body itself costs),
- streamed to pdx's client (its one-thread event loop, as serve-bench runs it).

Prints the median of each over the rounds (modes interleaved, so drift hits
all of them) and pdx's rate over curl's with the same body, which issue 17
wants within 2%.

    python tests/benchmarks/server_footprint.py [--model PATH] [-t 1] [-n 256] [--rounds 5]

Without --model it uses the default 100M synthetic model (written on first
use). The server gets -t threads (default 1), so on 2 cores the client has
one core to itself, as it would beside a GPU server.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import requests

from pdx.plugins.llamacpp.locate import find_llama_server
from pdx.domain.prompt_stream import PromptStream
from pdx.domain.serving import prometheus
from pdx.measure.serving.load import Planned, run_load
from pdx.measure.serving.managed import ManagedServer, free_port
from pdx.measure.serving.openai import CompletionsClient, LlamaServerCompletion
from pdx.domain.synth import ensure_gguf
from pdx.domain.workload import TestSpec

PREDICTED = ("llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total")


def server_rate(url: str, send) -> float:
    """The server's own decode rate over one request: Δ predicted tokens / Δ predicting seconds."""
    before = prometheus.parse(requests.get(f"{url}/metrics", timeout=30).text)
    send()
    after = prometheus.parse(requests.get(f"{url}/metrics", timeout=30).text)
    delta = prometheus.difference(before, after)
    tokens, seconds = (delta.get((name, None)) or 0.0 for name in PREDICTED)
    return tokens / seconds if seconds else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("-t", "--threads", type=int, default=1)
    parser.add_argument("-p", "--n-prompt", type=int, default=16)
    parser.add_argument("-n", "--n-gen", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    curl = shutil.which("curl")
    model = args.model or str(ensure_gguf("100m", "f16"))
    stream = PromptStream(7)
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        command = [str(find_llama_server()), "-m", model, "--host", "127.0.0.1", "--port", str(port), "--metrics",
                   "-t", str(args.threads)]
        server = ManagedServer("llama-server", command, port, Path(tmp) / "server.log", startup_timeout_s=300)
        server.start()
        client = CompletionsClient(server.url, "model", dialect=LlamaServerCompletion())
        test = TestSpec(args.n_prompt, 0)

        def prompt() -> list[int]:
            return stream.next(test).prompts[0]  # fresh ids each request: no prefix-cache reuse

        def pdx_body(ids: list[int], stream_: bool = True) -> dict:
            return json.loads(client.body(ids, args.n_gen)) | {"stream": stream_}

        def plain_body(ids: list[int]) -> dict:
            return {"prompt": ids, "n_predict": args.n_gen, "ignore_eos": True, "stream": True}

        def by_curl(body: dict) -> None:
            subprocess.run([curl, "-sN", "-o", "/dev/null", "-H", "Content-Type: application/json", "-d",
                            json.dumps(body), f"{server.url}/completion"], check=True, timeout=600)

        modes = {
            "unstreamed": lambda: requests.post(f"{server.url}/completion", json=pdx_body(prompt(), False),
                                                timeout=600).raise_for_status(),
            "curl, pdx's body": lambda: by_curl(pdx_body(prompt())),
            "curl, plain body": lambda: by_curl(plain_body(prompt())),
            "pdx client": lambda: run_load(client, iter([Planned(prompt(), args.n_gen, "footprint")])),
        }
        if curl is None:
            modes = {k: v for k, v in modes.items() if not k.startswith("curl")}
            print("curl is not installed: its rows are left out")
        rates: dict[str, list[float]] = {mode: [] for mode in modes}
        try:
            modes["unstreamed"]()  # warm-up: the first request builds the server's compute graphs
            for _ in range(args.rounds):
                for mode, send in modes.items():
                    rates[mode].append(server_rate(server.url, send))
        finally:
            server.stop()
    print(f"llama-server -t {args.threads}, {Path(model).name}, {args.n_gen} tokens per request, "
          f"{args.rounds} rounds: the server's decode rate (median t/s)")
    medians = {mode: statistics.median(values) for mode, values in rates.items()}
    for mode, value in medians.items():
        print(f"  {mode:18} {value:9.2f}   ({', '.join(f'{v:.1f}' for v in rates[mode])})")
    same, plain = medians.get("curl, pdx's body"), medians.get("curl, plain body")
    if same:
        ratio = medians["pdx client"] / same
        print(f"pdx client / curl (same body): {ratio:.3f} ({(ratio - 1) * 100:+.1f}%)")
        print(f"pdx's body / plain body (both by curl): {same / plain:.3f}")


if __name__ == "__main__":
    main()
