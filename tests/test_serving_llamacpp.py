"""Issue 17's serving figures against a real llama-server on a tiny synthetic model:
scheduled times stored for an open loop, and the capacity search end to end. The
assertions are about structure and invariants, never timings (the machine is shared)."""

import json

import pytest

from pdx.domain.serving.capacity import SIDES
from pdx.domain.synth import get_shape, write_gguf

from conftest import run_pdx

pytestmark = pytest.mark.llamacpp

SERVER_ARGS = ("--server-args", "-c 2048 -np 2")


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    return str(write_gguf(get_shape("tiny"), "f16", tmp_path_factory.mktemp("serving") / "tiny-f16.gguf"))


def serve(registry_url, model, *args):
    result = run_pdx("serve-bench", "--backend", "llamacpp-server", "-m", model, "--registry", registry_url,
                     "--json", *SERVER_ARGS, *args)
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    return run


def test_capacity_on_llama_server(registry_url, small_model):
    run = serve(registry_url, small_model, "--scenario", "capacity", "--slo", "ttft=2s,itl=200ms", "-p", "32",
                "-n", "8", "--num-requests", "8", "--precision", "0.5", "--saturation-window", "3")
    (test,) = run["tests"]
    assert test["status"] == "ok", test["error"]
    found = test["stats"]["capacity"]
    assert found["axis"] == "rate" and found["slo"] == {"ttft": 2000, "itl": 200} and found["percentile"] == 90
    assert {r["role"] for r in test["requests"]} == {p["role"] for p in found["points"]}
    assert all(r["scheduled_ns"] is not None for r in test["requests"])
    lo, hi = found["bracket"]
    if found["found"]:
        assert lo < hi and lo <= found["capacity"] <= hi and found["side"] == SIDES[found["broke_first"]]
        assert all(p["held"] for p in found["points"] if p["x"] <= lo)
    else:
        assert found["note"]
    shown = run_pdx("show", run["id"], "--registry", registry_url).stdout
    assert "capacity" in shown and "sched TTFT p99" in shown


def test_open_loop_on_llama_server_keeps_the_schedule(registry_url, small_model):
    run = serve(registry_url, small_model, "--request-rate", "50", "--max-concurrency", "2", "-p", "16", "-n", "8",
                "--num-requests", "12", "--saturation-window", "0")
    (test,) = run["tests"]
    records = test["requests"]
    assert len(records) == 12 and all(r["status"] == "ok" for r in records)
    assert all(r["send_ns"] >= r["scheduled_ns"] for r in records)
    stats = test["stats"]
    assert stats["ttft_sched_ms"]["n"] == 12 and stats["ttft_sched_ms"]["max"] >= stats["ttft_ms"]["max"]
    assert 0 < stats["chunks_per_token"] <= 1  # a chunk carries one token or more, never less


def test_overhead_splits_ttft_into_the_engines_prefill_and_the_servers_part(registry_url, small_model):
    run = serve(registry_url, small_model, "--scenario", "overhead", "-p", "32,128", "--num-requests", "3")
    tests = {t["spec"]["n_prompt"]: t for t in run["tests"]}
    assert set(tests) == {32, 128}
    for n, test in tests.items():
        assert test["status"] == "ok", test["error"]
        records = test["requests"]
        assert len(records) == 3 and all(r["role"] == "overhead" and r["max_tokens"] == 1 for r in records)
        assert all(r["usage"]["prompt_tokens"] == n for r in records)  # the server prefilled the whole prompt
        (sample,) = test["samples"]
        pairs = sample["engine"]["overhead"]
        assert len(pairs["engine_prefill_ns"]) == 3 and all(ns > 0 for ns in pairs["engine_prefill_ns"])
        split = test["stats"]["overhead"]
        assert split["in_process"] == "llamacpp-python" and split["pairs"] == 3
        parts = sorted(r["first_ns"] - p for r, p in zip(records, pairs["engine_prefill_ns"]))
        assert split["server_part_median_ms"] == pytest.approx(parts[1] / 1e6)  # TTFT minus prefill, per pair
        assert split["server_reported_prefill_median_ms"] > 0  # llama-server's own prompt seconds
        # The in-process engine ran the same model with the server's threads; its identity is stored.
        server_threads = run["engine"]["details"]["server_command"].split(" -t ")[1].split()[0]
        assert test["engine"]["in_process"]["settings"]["threads"] == int(server_threads) == run["threads"]
    shown = run_pdx("show", run["id"], "--registry", registry_url).stdout
    assert "the engine's prefill" in shown and "the server's own part" in shown
