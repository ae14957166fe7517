"""Importing other tools' results: llama-bench (the real binary), vllm bench
serve and mlx_lm.benchmark (see tests/data/README.md for what is recorded)."""

import json
import os
import shutil
import socket
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from conftest import assert_one_line_error, pdx_here, pdx_import, run_pdx_here, show

DATA = Path(__file__).parent / "data"




def assert_nothing_stored(registry_url):
    assert json.loads(pdx_here("runs", "--registry", registry_url, "--json")) == []


def test_import_help_lists_every_format_the_registry_has():
    """`pdx import --help` lists what the importer registry holds (pdx's own and plugins'), each with
    its description: a format added there is in the help with no other edit."""
    from pdx.registry.importers import formats, importers

    help_text = " ".join(run_pdx_here("import", "--help").stdout.split())
    listed = help_text.split("Formats (--format):", 1)[1]
    assert {"guidellm", "aiperf", "aiperf-records", "vllm-bench-serve-text"} <= set(importers())
    for name in formats():
        assert f" {name} " in f" {listed} ", name
    for importer in importers().values():  # as wrapped: compared without the spaces (a wrap may break at a hyphen)
        assert "".join(importer.description.split()) in "".join(listed.split()), importer.name


@pytest.mark.parametrize("name, test_name, batch", [("mlx_lm_benchmark_b1.txt", "pp64+tg16", 1),
                                                    ("mlx_lm_benchmark_b2.txt", "pp64+tg16/b2", 2)])
def test_mlx_lm_benchmark_text(registry_url, name, test_name, batch):
    done = pdx_import(registry_url, DATA / name)
    assert done["format"] == "mlx-lm-benchmark" and len(done["added"]) == 1
    run = show(registry_url, done["added"][0])
    assert run["origin"] == "mlx_lm.benchmark" and run["backend"] == "mlx" and run["provenance"]["file"]
    (test,) = run["tests"]
    assert test["name"] == test_name and len(test["samples"]) == 3
    assert all(s["n_prompt"] == 64 * batch and s["n_gen"] == 16 * batch for s in test["samples"])
    # Phase times come from mlx-lm's own rates, so pdx's phase rates give them back.
    averages = test["engine"]["averages"]
    assert test["stats"]["prompt_rate"]["mean"] == pytest.approx(averages["prompt_tps"], rel=1e-3)
    assert test["stats"]["gen_rate"]["mean"] == pytest.approx(averages["generation_tps"], rel=1e-3)
    assert pdx_import(registry_url, DATA / name)["added"] == []  # twice adds nothing


def test_an_import_can_name_the_real_model(registry_url, tiny_gguf):
    done = pdx_import(registry_url, DATA / "mlx_lm_benchmark_b1.txt", "--model", str(tiny_gguf), "--tag", "mac")
    run = show(registry_url, done["added"][0])
    assert run["model"]["path"] == str(tiny_gguf) and run["model"]["n_layers"] > 0 and run["tags"] == ["mac"]


def _file_figures(document: dict, metric: str) -> dict:
    """The file's own mean/median/std/percentiles of one latency, keyed as pdx's distributions are."""
    out = {}
    for key, value in document.items():
        parts = key.split("_")
        if len(parts) == 3 and parts[1] == metric and parts[2] == "ms" and value is not None:
            out["std" if parts[0] == "std" else parts[0]] = value
    return out


def test_vllm_bench_serve_detailed_is_a_serving_test(registry_url):
    """The intended fix of issue 12: a serving test like pdx serve-bench's, one request record per request,
    whose TTFT/TPOT/ITL figures equal the file's own (no blended pp+tg row)."""
    document = json.loads((DATA / "vllm_bench_serve_detailed.json").read_text())
    done = pdx_import(registry_url, DATA / "vllm_bench_serve_detailed.json")
    assert done["format"] == "vllm-bench-serve"
    run = show(registry_url, done["added"][0])
    assert run["origin"] == "vllm-bench-serve" and run["backend"] == "vllm" and run["status"] == "complete"
    (test,) = run["tests"]
    assert test["kind"] == "serve" and test["name"] == "c2:p32+g8:n8" and test["error"] is None
    assert test["spec"]["scenario"] == "load" and test["spec"]["concurrency"] == 2
    assert len(test["requests"]) == 8 and all(r["status"] == "ok" for r in test["requests"])
    assert [r["first_ns"] for r in test["requests"]] == [round(t * 1e9) for t in document["ttfts"]]
    assert [r["end_ns"] for r in test["requests"]] == [round(t * 1e9) for t in document["latencies"]]
    assert [r["n_gen"] for r in test["requests"]] == document["output_lens"]
    stats = test["stats"]
    assert stats["completed"] == document["completed"] and not stats.get("reported")
    for metric in ("ttft", "tpot", "itl"):
        for key, value in _file_figures(document, metric).items():
            assert stats[f"{metric}_ms"][key] == pytest.approx(value, rel=1e-6, abs=1e-6), (metric, key)
    for key in ("request_throughput", "output_throughput", "total_token_throughput"):
        assert stats[key] == pytest.approx(document[key], rel=1e-9)
    assert test["engine"]["mean_itl_ms"] == document["mean_itl_ms"] and "ttfts" not in test["engine"]
    shown = pdx_here("show", run["id"], "--registry", registry_url)
    assert f"{document['median_ttft_ms']:.1f}" in shown and f"{document['p99_itl_ms']:.1f}" in shown
    assert "pp32+tg8" not in shown and "as reported" not in shown


def test_vllm_failed_requests_are_recorded_as_failed(registry_url, tmp_path):
    document = json.loads((DATA / "vllm_bench_serve_detailed.json").read_text())
    # The recording, with its fourth request failed the way vLLM records a failure.
    document["errors"][3], document["ttfts"][3], document["itls"][3] = "Bad Request: prompt too long", 0.0, []
    document["output_lens"][3], document["completed"], document["failed"] = 0, 7, 1
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(document))
    (test,) = show(registry_url, pdx_import(registry_url, path)["added"][0])["tests"]
    assert [r["status"] for r in test["requests"]].count("error") == 1
    assert test["requests"][3]["error"] == "Bad Request: prompt too long"
    assert test["stats"]["completed"] == 7 and "1 of 8 requests failed: Bad Request" in test["error"]


def test_vllm_bench_serve_summary_only(registry_url):
    document = json.loads((DATA / "vllm_bench_serve_summary.json").read_text())
    run = show(registry_url, pdx_import(registry_url, DATA / "vllm_bench_serve_summary.json")["added"][0])
    (test,) = run["tests"]
    stats = test["stats"]
    assert test["kind"] == "serve" and test["requests"] == [] and stats["reported"]
    assert stats["ttft_ms"]["p99"] == document["p99_ttft_ms"] and stats["itl_ms"]["mean"] == document["mean_itl_ms"]
    assert stats["request_throughput"] == document["request_throughput"]
    assert "(as reported)" in pdx_here("show", run["id"], "--registry", registry_url)


def _damaged(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("source", ["mlx_lm_benchmark_b1.txt", "vllm_bench_serve_detailed.json"])
def test_truncated_files_are_rejected_whole(registry_url, tmp_path, source):
    text = (DATA / source).read_text()
    path = _damaged(tmp_path, source, text[: len(text) * 2 // 3])
    assert_one_line_error(run_pdx_here("import", str(path), "--registry", registry_url), "cannot import", "truncated")
    assert_nothing_stored(registry_url)


def test_malformed_and_oversized_files(registry_url, tmp_path, monkeypatch):
    cases = [
        (_damaged(tmp_path, "x.txt", "hello\n"), "not a format pdx imports"),
        (_damaged(tmp_path, "empty.json", ""), "empty"),
        (_damaged(tmp_path, "bad.json", '{"date": "x", "completed": 1, "duration": 1, "total_input_tokens": 1, '
                                        '"total_output_tokens": "lots"}'), "not a number"),
        (_damaged(tmp_path, "ragged.json", json.dumps(json.loads((DATA / "vllm_bench_serve_detailed.json").read_text())
                                                      | {"ttfts": [0.1]})), "unequal length"),
        (tmp_path / "missing.json", "No such file"),
    ]
    for path, needle in cases:
        assert_one_line_error(run_pdx_here("import", str(path), "--registry", registry_url), "cannot import", needle)
    monkeypatch.setenv("PDX_IMPORT_MAX_BYTES", "1000")
    big = run_pdx_here("import", str(DATA / "vllm_bench_serve_detailed.json"), "--registry", registry_url)
    assert_one_line_error(big, "over the limit of 1000", "PDX_IMPORT_MAX_BYTES")
    assert_nothing_stored(registry_url)


# -- llama-bench: produced by the real binary ----------------------------------


@pytest.fixture(scope="module")
def llama_bench_outputs(tmp_path_factory):
    from pdx.plugins.llamacpp.locate import find_llama_bench
    from pdx.domain.synth import get_shape, write_gguf

    binary = find_llama_bench()
    folder = tmp_path_factory.mktemp("llama-bench")
    model = write_gguf(get_shape("tiny"), "f16", folder / "tiny.gguf")
    outputs = {}
    for fmt in ("json", "jsonl", "sql"):
        done = subprocess.run([str(binary), "-m", str(model), "-p", "16", "-n", "4", "-r", "3", "-t", "1,2",
                               "-o", fmt], capture_output=True, text=True, timeout=300, check=True)
        outputs[fmt] = folder / f"out.{fmt}"
        outputs[fmt].write_text(done.stdout)
    return outputs


@pytest.mark.llamacpp
@pytest.mark.parametrize("fmt", ["json", "jsonl", "sql"])
def test_real_llama_bench_output(registry_url, llama_bench_outputs, fmt):
    path = llama_bench_outputs[fmt]
    done = pdx_import(registry_url, path)
    assert done["format"] == f"llama-bench-{fmt}" and len(done["added"]) == 2  # one run per thread count
    runs = [show(registry_url, run_id) for run_id in done["added"]]
    assert sorted(r["threads"] for r in runs) == [1, 2]
    for run in runs:
        assert run["origin"] == "llama-bench" and run["backend"] == "llamacpp-bench"
        assert [t["name"] for t in run["tests"]] == ["pp16", "tg4"] and run["engine"]["commit"]
        assert run["engine"]["settings"]["threads"] == run["threads"]
    if fmt == "sql":  # llama-bench's SQL keeps only mean and stddev
        assert all(t["samples"] == [] and t["stats"]["reported"] for r in runs for t in r["tests"])
    else:
        records = ([json.loads(line) for line in path.read_text().splitlines() if line.strip()]
                   if fmt == "jsonl" else json.loads(path.read_text()))
        stored = sorted([s["ns"] for s in t["samples"]] for r in runs for t in r["tests"])
        assert stored == sorted(r["samples_ns"] for r in records)
    assert pdx_import(registry_url, path)["added"] == []
    text = path.read_text()
    cut = _damaged(path.parent, f"cut.{fmt}", text[: len(text) - 40])
    assert_one_line_error(run_pdx_here("import", str(cut), "--registry", registry_url, "--format",
                                       f"llama-bench-{fmt}"),
                          "cannot import")


# -- vLLM: the real `vllm bench serve`, where vLLM is installed ----------------


def _tiny_hf_model(folder: Path) -> Path:
    """A 2-layer random-weight llama in Hugging Face layout (ENGINES.md's recipe)."""
    import numpy as np
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab, dim, layers, ff, heads, kv_heads = 512, 128, 2, 256, 4, 2  # the shape recorded in tests/data
    rng = np.random.default_rng(0)

    def weight(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    tensors = {"model.embed_tokens.weight": weight(vocab, dim), "model.norm.weight": np.ones(dim, np.float32),
               "lm_head.weight": weight(vocab, dim)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for name, rows in (("q_proj", dim), ("k_proj", dim * kv_heads // heads),
                           ("v_proj", dim * kv_heads // heads), ("o_proj", dim)):
            tensors[p + f"self_attn.{name}.weight"] = weight(rows, dim)
        tensors[p + "mlp.gate_proj.weight"] = weight(ff, dim)
        tensors[p + "mlp.up_proj.weight"] = weight(ff, dim)
        tensors[p + "mlp.down_proj.weight"] = weight(dim, ff)
        tensors[p + "input_layernorm.weight"] = np.ones(dim, np.float32)
        tensors[p + "post_attention_layernorm.weight"] = np.ones(dim, np.float32)
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": dim, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "intermediate_size": ff, "vocab_size": vocab,
        "rms_norm_eps": 1e-5, "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2}))
    tokenizer = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "t1", "eos_token": "t2", "unk_token": "t0"}))
    return folder


@pytest.mark.vllm
def test_real_vllm_bench_serve_output_imports(registry_url, tmp_path):
    pytest.importorskip("vllm", reason="vLLM is not installed here (its tox environment installs it)")
    vllm = shutil.which("vllm") or pytest.skip("no vllm command")
    model = _tiny_hf_model(tmp_path / "model")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
           "VLLM_CACHE_ROOT": str(tmp_path / "vllm-cache")}
    server = subprocess.Popen([vllm, "serve", str(model), "--host", "127.0.0.1", "--port", str(port),
                               "--enforce-eager"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        import requests

        deadline = time.monotonic() + 300
        while True:
            assert server.poll() is None, "vllm serve exited"
            try:
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, "vllm serve never became healthy"
            time.sleep(2)
        subprocess.run([vllm, "bench", "serve", "--backend", "vllm", "--model", str(model), "--host", "127.0.0.1",
                        "--port", str(port), "--dataset-name", "random", "--random-input-len", "32",
                        "--random-output-len", "8", "--num-prompts", "8", "--max-concurrency", "2",
                        "--save-result", "--save-detailed", "--result-dir", str(tmp_path),
                        "--result-filename", "serve.json"], env=env, check=True, timeout=600,
                       capture_output=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
    document = json.loads((tmp_path / "serve.json").read_text())
    run = show(registry_url, pdx_import(registry_url, tmp_path / "serve.json")["added"][0])
    (test,) = run["tests"]
    assert test["name"] == "c2:p32+g8:n8" and len(test["requests"]) == document["completed"] == 8
    ttft_ms = statistics.median(r["first_ns"] / 1e6 for r in test["requests"])
    assert ttft_ms == pytest.approx(document["median_ttft_ms"], rel=1e-6)
    assert test["stats"]["ttft_ms"]["p99"] == pytest.approx(document["p99_ttft_ms"], rel=1e-6)
