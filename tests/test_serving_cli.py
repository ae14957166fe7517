"""serve-bench and server backends end to end through the CLI, against the local
test server (no engine needed), plus the managed-server lifecycle with real
processes."""

import json
import signal
import sys

import pytest

from pdx.measure.environment import redact_argv
from pdx.contract.errors import PdxError
from pdx.measure.serving.managed import ManagedServer, free_port
from pdx.measure.serving.backend import public_url

from conftest import FAKE_SERVER, assert_one_line_error, run_pdx


def serve(fake_server, registry_url, *args, model="fake"):
    result = run_pdx("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-o", f"model_name={model}",
                     "--registry", registry_url, "--json", *args)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)[0], result


def test_sweep_through_the_cli_stores_every_request(fake_server, registry_url):
    run, result = serve(fake_server, registry_url, "--scenario", "sweep", "-c", "1,4", "-p", "8", "-n", "6",
                        "--num-requests", "8", "--slo", "ttft=60s,tpot=10s", "--percentiles", "50,99.9")
    assert result.returncode == 0 and run["status"] == "complete"
    assert [t["name"] for t in run["tests"]] == ["c1:p8+g6:n8", "c4:p8+g6:n8"]
    for test in run["tests"]:
        assert len(test["requests"]) == 8 and all(r["n_gen"] == 6 and r["status"] == "ok" for r in test["requests"])
        stats = test["stats"]
        # An SLO no request of a 50 ms server misses, however busy the machine.
        assert stats["completed"] == 8 and stats["good_requests"] == 8 and "p99.9" in stats["ttft_ms"]
        assert test["spec"]["slo"] == {"ttft": 60000.0, "tpot": 10000.0}
        # It ran at its concurrency (how throughput grows with it is a figure, not a test).
        spans = [(r["send_ns"], r["send_ns"] + r["end_ns"]) for r in test["requests"]]
        assert max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans) == test["spec"]["concurrency"]
    text = run_pdx("show", run["id"], "--registry", registry_url).stdout
    assert "TTFT p50" in text and "c4:p8+g6:n8" in text and "concurrency sweep" in text


def test_failed_requests_fail_the_test_and_keep_the_rest(fake_server, registry_url):
    run, result = serve(fake_server, registry_url, "-c", "2", "-p", "8", "-n", "8", "--num-requests", "4",
                        "--warmup-requests", "0", model="fake-early")
    assert result.returncode == 1 and run["status"] == "failed"
    (test,) = run["tests"]
    assert test["status"] == "failed"
    assert "4 of 4 requests failed: the stream ended after 4 of 8 tokens" in test["error"]
    assert [r["n_gen"] for r in test["requests"]] == [4, 4, 4, 4]


@pytest.mark.parametrize("mode", ["nan-usage", "negative-usage"])
def test_a_server_s_impossible_usage_fails_its_requests_not_the_registry(fake_server, registry_url, mode):
    """A server whose usage holds NaN (or -5 tokens): each request fails at the client, naming it; the
    registry never sees the figure, so the run is stored whole as a failed test, not refused mid-run
    with "report it to its author"."""
    run, result = serve(fake_server, registry_url, "-c", "1", "-p", "8", "-n", "4", "--num-requests", "2",
                        "--warmup-requests", "0", model=f"fake-{mode}")
    assert result.returncode == 1 and "report it to its author" not in result.stderr, result.stderr
    (test,) = run["tests"]
    assert test["status"] == "failed" and "2 of 2 requests failed: the server" in test["error"]
    assert all(r["usage"] == {} for r in test["requests"])


def test_pp_tg_over_http_are_server_figures(fake_server, registry_url):
    result = run_pdx("bench", "--backend", "vllm-server", "--url", fake_server, "-o", "model_name=fake",
                     "-p", "16", "-n", "4", "-b", "1,2", "-r", "2", "--registry", registry_url, "--json")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    tests = {t["name"]: t for t in run["tests"]}
    # pp is the time to the first token, tg first token to last, each sample from its own request; the test
    # server sends the first token 50 ms after the request at the soonest.
    for name in ("pp16", "tg4"):
        requests = {r["sample_idx"]: r for r in tests[name]["requests"]}
        for k, sample in enumerate(tests[name]["samples"]):
            events = requests[k]["events"]
            assert requests[k]["first_ns"] >= 49e6 and sample["ns"] > 0  # 1 ms: the kernel stamps converted
            assert sample["ns"] == (requests[k]["first_ns"] if name == "pp16" else events[-1][0] - events[0][0])
    assert len(tests["tg4/b2"]["requests"]) == 4 and tests["tg4/b2"]["samples"][0]["n_gen"] == 8
    assert tests["pp16"]["stats"]["serving"]["ttft_ms"]["n"] == 2
    assert run["engine"]["settings"] == {"mode": "server", "url": fake_server}


def test_serving_errors_are_one_line(fake_server, registry_url, tiny_gguf):
    base = ("serve-bench", "--registry", registry_url)
    refused = assert_one_line_error(run_pdx(*base, "--backend", "vllm-server", "--url", "http://127.0.0.1:1"))
    # The system's words, not requests' nesting of urllib3's reprs (it ended in a stray `"))`).
    assert refused == "pdx: error: cannot reach a server at http://127.0.0.1:1: Connection refused; check --url, " \
                      "and that the server runs"
    assert_one_line_error(run_pdx(*base, "--backend", "llamacpp-python", "-m", str(tiny_gguf)),
                          "backend llamacpp-python runs no serving scenarios", "vllm-server")
    assert_one_line_error(run_pdx(*base, "--backend", "vllm-server", "--url", fake_server, "--slo", "ttft=soon"),
                          "--slo: cannot read 'ttft=soon'")
    assert_one_line_error(run_pdx(*base, "--backend", "vllm-server", "--url", fake_server, "--scenario", "cache",
                                  "-p", "8", "--prefix", "8"), "shared prefix (8) must be shorter")
    assert_one_line_error(run_pdx(*base, "--backend", "vllm-server", "--url", fake_server, "-c", "2",
                                  "--request-rate", "4"), "not both")


def test_an_unreachable_server_is_said_in_a_few_clean_words():
    import requests

    from pdx.measure.serving.backend import network_reason, served_models

    with pytest.raises(PdxError) as refused:
        served_models("http://127.0.0.1:1", None)
    assert refused.value.message == "cannot reach a server at http://127.0.0.1:1: Connection refused"
    with pytest.raises(PdxError) as unknown:  # .invalid never resolves (RFC 6761)
        served_models("http://pdx-test.invalid:8000", None)
    reason = unknown.value.message.removeprefix("cannot reach a server at http://pdx-test.invalid:8000: ")
    assert reason and not any(mark in reason for mark in ('"', "))", "HTTPConnection", "Errno", "Caused by")), reason
    timeout = requests.ReadTimeout("HTTPConnectionPool(host='h', port=1): Read timed out. (read timeout=30)")
    assert network_reason(timeout) == "Read timed out. (read timeout=30)"


def test_secrets_are_redacted_from_command_lines_and_urls():
    assert redact_argv(["pdx", "bench", "--api-key", "s3", "--api-key=s4", "-p", "1"]) == \
        ["pdx", "bench", "--api-key", "REDACTED", "--api-key=REDACTED", "-p", "1"]
    assert public_url("http://user:pw@host:8000/v1") == "http://host:8000/v1"


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_managed_server_lifecycle(tmp_path, sigint):
    """Started and stopped cleanly by SIGINT (the server's own graceful exit, code 0), also from a pdx
    that runs as a background job, where SIGINT comes ignored and its children would inherit that."""
    port = free_port()
    server = ManagedServer("fake", [sys.executable, str(FAKE_SERVER), "--port", str(port)], port,
                           tmp_path / "fake.log", startup_timeout_s=30)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN if sigint == "ignored" else signal.default_int_handler)
    try:
        server.start()
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        assert server.alive()
        with pytest.raises(PdxError, match=f"port {port} on 127.0.0.1 is already in use"):
            ManagedServer("again", ["true"], port, tmp_path / "again.log").start()
    finally:
        code = server.stop(grace_s=5)
    assert code == 0 and not server.alive() and (tmp_path / "fake.log").exists()


def test_managed_server_that_exits_or_never_answers(tmp_path):
    secret = "hunter2-secret"
    exits = ManagedServer("quitter", [sys.executable, "-c", f"print('bad flag {secret}'); raise SystemExit(3)"],
                          free_port(), tmp_path / "q.log", secrets=[secret])
    with pytest.raises(PdxError, match=r"quitter exited with code 3 before it became healthy: bad flag \*\*\*"):
        exits.start()
    assert secret not in (tmp_path / "q.log").read_text()
    silent = ManagedServer("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], free_port(),
                           tmp_path / "s.log", startup_timeout_s=1)
    with pytest.raises(PdxError, match="sleeper did not become healthy within 1 s"):
        silent.start()
    assert not silent.alive()


@pytest.mark.parametrize("backend, variable", [("llamacpp-server", "LLAMA_API_KEY"), ("vllm-server", "VLLM_API_KEY")])
def test_a_started_servers_api_key_goes_by_its_environment_only(monkeypatch, backend, variable):
    from pdx.contract.backend import BackendConfig
    from pdx.base.plugin_manager import get_backend

    cls = get_backend(backend)
    monkeypatch.setenv(variable, "left-over-key")  # pdx's own environment never hands a key on unasked
    assert variable not in cls(BackendConfig()).server_env()
    assert cls(BackendConfig(api_key="k-4417")).server_env()[variable] == "k-4417"


def test_overhead_needs_an_in_process_engine_and_the_model_files(fake_server, registry_url):
    run, result = serve(fake_server, registry_url, "--scenario", "overhead", "-p", "8,16", "--num-requests", "2")
    assert [t["status"] for t in run["tests"]] == ["skipped", "skipped"]
    assert "needs the served model's files here: give -m PATH" in run["tests"][0]["error"]
    result = run_pdx("serve-bench", "--backend", "openai", "--url", fake_server, "--registry", registry_url, "--json",
                     "--scenario", "overhead", "-p", "8", "--num-requests", "2")
    (run,) = json.loads(result.stdout)
    assert "openai has no in-process engine" in run["tests"][0]["error"]
    assert_one_line_error(run_pdx("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-p", "8,16",
                                  "--registry", registry_url), "-p N,N) is for --scenario overhead")
    assert_one_line_error(run_pdx("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-p", "²",
                                  "--registry", registry_url), "-p")
