"""GuideLLM and AIPerf themselves (tox -e tools installs both) against a real llama-server on a pdx
synthetic model, pointed at its HF tokenizer: their files imported, shown, reported and published.
That the tools' token counts agree with the server's is the check that the synthetic GGUF and HF
tokenizer are one tokenizer (pdx.domain.synth.vocabulary). Tiny workloads: the point is the path, not the
figures."""

import json
import os
import shutil
import subprocess

import pytest

from pdx.plugins.llamacpp.locate import find_llama_server
from pdx.measure.serving.managed import ManagedServer, free_port
from pdx.domain.synth import get_shape, write_gguf, write_hf

from conftest import pdx_here

pytestmark = pytest.mark.tools
SHAPE = get_shape("tiny")
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A llama-server of the tiny synthetic GGUF, and the same shape's HF folder for the tools' tokenizer."""
    root = tmp_path_factory.mktemp("tools")
    model = write_gguf(SHAPE, "f16", root / "tiny.gguf")
    tokenizer = write_hf(SHAPE, "float32", root / "tiny-hf")
    port = free_port()
    server = ManagedServer("llama-server", [str(find_llama_server()), "-m", str(model), "--host", "127.0.0.1",
                                            "--port", str(port), "-t", "1", "-c", "2048", "-np", "2", "--metrics",
                                            "--alias", "tiny"], port, root / "server.log", startup_timeout_s=300)
    server.start()
    yield server.url, tokenizer
    server.stop()


def _tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is not installed (tox -e tools installs it)"
    return found


def _readers(registry_url, run_id, tmp_path):
    shown = pdx_here("show", run_id, "--registry", registry_url)
    pdx_here("report", "--registry", registry_url, "-o", str(tmp_path / "report.html"))
    pdx_here("publish", str(tmp_path / "site"), "--registry", registry_url)
    assert (tmp_path / "site" / "runs" / f"{run_id}.html").exists() or any((tmp_path / "site").rglob(f"*{run_id}*"))
    return shown


def test_guidellm_against_llama_server_imports_every_request(served, registry_url, tmp_path):
    url, tokenizer = served
    out = tmp_path / "guidellm.json"
    subprocess.run([_tool("guidellm"), "run",
                    "--backend", f"kind=openai_http,target={url},model=tiny,request_format=/v1/completions,stream=true",
                    "--profile", "kind=concurrent,streams=2",
                    "--data", "kind=synthetic_text,prompt_tokens=32,output_tokens=8",
                    "--constraint", "kind=max_requests,count=8", "--tokenizer", f"kind=hf_auto,model={tokenizer}",
                    "--seed", "kind=static,value=42", "--output", f"kind=json,path={out}",
                    "--disable-console-interactive"], env=os.environ | OFFLINE, check=True, capture_output=True,
                   timeout=600)
    done = json.loads(pdx_here("import", str(out), "--registry", registry_url, "--json"))
    assert done["format"] == "guidellm"
    (run_id,) = done["added"]
    (test,) = json.loads(pdx_here("show", run_id, "--registry", registry_url, "--json"))["tests"]
    assert len(test["requests"]) == 8 and all(r["status"] == "ok" for r in test["requests"])
    # GuideLLM cut each prompt to 32 tokens with the HF tokenizer; the server counted 32 of them too.
    assert all(r["usage"]["prompt_tokens"] == 32 and r["n_gen"] == 8 for r in test["requests"])
    from tokenizers import Tokenizer

    ours = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    report = json.loads(out.read_text())
    prompts = [json.loads(r["request_args"])["body"]["prompt"]
               for r in report["benchmarks"][0]["requests"]["successful"]]
    assert [len(ours.encode(p).ids) for p in prompts] == [32] * 8
    assert "imported from guidellm" in _readers(registry_url, run_id, tmp_path)


def test_aiperf_against_llama_server_imports_every_request(served, registry_url, tmp_path):
    url, tokenizer = served
    artifacts = tmp_path / "aiperf"
    subprocess.run(["nice", "-n", "5", _tool("aiperf"), "profile", "--model", "tiny", "--url", url,
                    "--endpoint-type", "completions", "--streaming", "--tokenizer", str(tokenizer),
                    "--synthetic-input-tokens-mean", "32", "--synthetic-input-tokens-stddev", "0",
                    "--output-tokens-mean", "8", "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
                    # A rate caps AIPerf's closed loop, which otherwise busy-waits a core.
                    "--concurrency", "2", "--request-rate", "4", "--request-rate-mode", "constant",
                    "--request-count", "8", "--random-seed", "42", "--artifact-dir", str(artifacts),
                    "--ui-type", "none", "--no-gpu-telemetry", "--workers-max", "1", "--record-processors", "1",
                    "--use-server-token-count"], check=True, capture_output=True, timeout=600)
    (export,) = artifacts.rglob("profile_export_aiperf.json")
    lines = [json.loads(line) for line in (export.parent / "profile_export.jsonl").read_text().splitlines()]
    done = json.loads(pdx_here("import", str(export), "--registry", registry_url, "--json"))
    assert done["format"] == "aiperf"
    (run_id,) = done["added"]
    (test,) = json.loads(pdx_here("show", run_id, "--registry", registry_url, "--json"))["tests"]
    assert len(test["requests"]) == len(lines) == 8 and all(r["status"] == "ok" for r in test["requests"])
    # AIPerf cut each prompt to 32 tokens with the HF tokenizer (its payloads are in inputs.json); that
    # tokenizer and the server both count 32.
    from tokenizers import Tokenizer

    ours = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    payloads = json.loads((export.parent / "inputs.json").read_text())["data"]
    assert [len(ours.encode(p["payloads"][0]["prompt"]).ids) for p in payloads] == [32] * 8
    assert all(line["metrics"]["usage_prompt_tokens"]["value"] == 32 for line in lines)
    assert "imported from aiperf" in _readers(registry_url, run_id, tmp_path)
