"""End to end against real llama.cpp (tox -e llamacpp builds it first)."""

import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pdx.domain.synth import get_shape, write_gguf

from conftest import assert_one_line_error, run_pdx

pytestmark = pytest.mark.llamacpp


def bench_json(*args: str) -> list[dict]:
    result = run_pdx("bench", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def rate(run: dict, name: str) -> float:
    test = next(t for t in run["tests"] if t["name"] == name)
    assert test["status"] == "ok", test["error"]
    return test["stats"]["rate"]["mean"]


def test_default_bench_prints_pp512_and_tg128_and_stores_them(registry_url):
    result = run_pdx("bench", "--registry", registry_url, "-r", "2")
    assert result.returncode == 0, result.stderr
    assert re.search(r"\bpp512\b.*\d+\.\d+ ± \d+\.\d+", result.stdout)
    assert re.search(r"\btg128\b.*\d+\.\d+ ± \d+\.\d+", result.stdout)
    run_id = re.search(r"run ([0-9a-f]{32}) complete", result.stdout)[1]

    listed = json.loads(run_pdx("runs", "--registry", registry_url, "--json").stdout)
    assert [r["id"] for r in listed] == [run_id]
    shown = json.loads(run_pdx("show", run_id[:10], "--registry", registry_url, "--json").stdout)
    assert shown["backend"] == "llamacpp" and shown["model"]["synthetic"] == "100m"
    assert [t["name"] for t in shown["tests"]] == ["pp512", "tg128"]
    for test in shown["tests"]:
        assert len(test["samples"]) == 2 and all(s["ns"] > 0 for s in test["samples"])
    assert shown["engine"]["commit"] and shown["engine"]["settings"]["threads"] >= 1
    assert shown["environment"]["packages"]["pdx"] and shown["hardware"]["cpu"]["logical_cores"] >= 1
    assert "pdx bench" in shown["command"]
    # llama-bench's own record is kept with each test, and its per-sample rates beside ours.
    record = shown["tests"][0]["engine"]
    assert record["n_prompt"] == 512 and record["build_commit"] == shown["engine"]["commit"]
    assert shown["tests"][0]["samples"][0]["engine"]["ts"] > 0
    text = run_pdx("show", run_id, "--registry", registry_url).stdout
    assert "pp512" in text and "model sha256" in text


def test_llama_bench_and_in_process_measure_the_same_work(registry_url, tiny_gguf):
    """Both paths on one model: the same tests, each engine's own count of the tokens it processed
    agreeing with the test, every sample stored with a positive finite rate. How close the two rates
    come is a benchmark (tests/benchmarks/llamacpp_paths.py prints it): on a busy machine llama-bench's
    spinning threads collapse (a 7x gap was seen), so no bound between them holds in a test."""
    bench, python = bench_json("--registry", registry_url, "--backend", "llamacpp-bench,llamacpp-python",
                               "-m", str(tiny_gguf), "-p", "64", "-n", "16", "-r", "3")
    assert (bench["backend"], python["backend"]) == ("llamacpp-bench", "llamacpp-python")
    assert bench["model"]["sha256"] == python["model"]["sha256"]
    tokens = {"pp64": (64, 0), "tg16": (0, 16)}
    for run in (bench, python):
        assert run["status"] == "complete" and [t["name"] for t in run["tests"]] == list(tokens)
        for test in run["tests"]:
            assert 0 < rate(run, test["name"]) < math.inf
            assert len(test["samples"]) == 3
            assert all(s["ns"] > 0 and (s["n_prompt"], s["n_gen"]) == tokens[test["name"]] for s in test["samples"])
    for test in bench["tests"]:  # llama-bench's record of the test, and its own rate of each sample
        assert (test["engine"]["n_prompt"], test["engine"]["n_gen"]) == tokens[test["name"]]
        assert all(s["engine"]["ts"] * s["ns"] / 1e9 == pytest.approx(sum(tokens[test["name"]]), rel=1e-3)
                   for s in test["samples"])
    in_process = {t["name"]: t["samples"] for t in python["tests"]}  # llama.cpp's perf counters, per sample
    assert all(s["engine"]["n_p_eval"] == 64 for s in in_process["pp64"])
    assert all(s["engine"]["n_eval"] == 16 for s in in_process["tg16"])


def test_in_process_depth_batch_and_phase_split(registry_url, tiny_gguf):
    (run,) = bench_json("--registry", registry_url, "--backend", "llamacpp-python", "-m", str(tiny_gguf),
                        "-p", "64", "-n", "8", "-pg", "32,8", "-d", "0,64", "-b", "1,3", "-r", "2")
    assert run["status"] == "complete"
    tests = {t["name"]: t for t in run["tests"]}
    assert len(tests) == 12 and all(t["status"] == "ok" for t in tests.values())
    # The engine's own counters confirm the work: one-token decodes are "eval", larger ones "prompt eval".
    assert all(s["engine"]["n_eval"] == 8 for s in tests["tg8@d64"]["samples"])
    assert all(s["engine"]["n_p_eval"] == 64 for s in tests["pp64"]["samples"])
    # At depth, only the new tokens are evaluated inside the clock: the fill came before it.
    assert all(s["engine"]["n_p_eval"] == 64 for s in tests["pp64@d64"]["samples"])
    batched = tests["pp32+tg8@d64/b3"]
    assert all(s["n_prompt"] == 96 and s["n_gen"] == 24 for s in batched["samples"])
    assert batched["stats"]["prompt_rate"]["mean"] > 0 and batched["stats"]["gen_rate"]["mean"] > 0
    assert batched["stats"]["per_sequence_rate"] == pytest.approx(batched["stats"]["rate"]["mean"] / 3)


@pytest.mark.parametrize("dtype", ["q8_0", "q4_0"])
def test_quantised_models_run_on_both_paths(registry_url, tmp_path, dtype):
    # A -march=native build takes llama.cpp's AMX path here and dies with SIGILL on these.
    model = write_gguf(get_shape("tiny"), dtype, tmp_path / f"tiny-{dtype}.gguf")
    runs = bench_json("--registry", registry_url, "--backend", "llamacpp-bench,llamacpp-python",
                      "-m", str(model), "-p", "64", "-n", "8", "-r", "2")
    assert [r["status"] for r in runs] == ["complete", "complete"]
    assert runs[0]["model"]["dtype"] == dtype.upper()


def test_engine_errors_are_recorded_per_test(registry_url, tiny_gguf):
    # llama.cpp refuses a quantised V cache without flash attention: a real engine error.
    for backend in ("llamacpp-bench", "llamacpp-python"):
        result = run_pdx("bench", "--registry", registry_url, "--backend", backend, "-m", str(tiny_gguf),
                         "-p", "32", "-n", "0", "-r", "1", "-o", "type_v=q4_0", "-o", "flash_attn=off", "--json")
        assert result.returncode == 1, result.stderr
        (run,) = json.loads(result.stdout)
        assert run["status"] == "failed" and run["tests"][0]["status"] == "failed"
        assert run["tests"][0]["error"]


def test_invalid_engine_options_and_binaries(registry_url, tiny_gguf, tmp_path):
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "-m", str(tiny_gguf), "-o", "flash_attn=maybe"),
                          "-o flash_attn: 'maybe' is not one of")
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "-m", str(tiny_gguf), "-o", "nope=1"),
                          "has no option 'nope'")
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "-m", str(tiny_gguf),
                                  "--llama-bench", str(tmp_path / "llama-bench")), "no executable llama-bench")


def _stored_tests(path: str) -> int:
    try:
        with sqlite3.connect(path) as conn:
            return conn.execute("select count(*) from tests").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.parametrize("backend", ["llamacpp-bench", "llamacpp-python"])
def test_ctrl_c_keeps_completed_tests_and_marks_the_run(tmp_path, backend):
    path = str(tmp_path / "registry.sqlite")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pdx", "bench", "--registry", path, "--backend", backend,
         "-p", "512", "-n", "128", "-pg", "512,128", "-r", "3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
        # As a terminal's Ctrl-C finds it: a job started in the background (nohup, `cmd &` in a script)
        # inherits SIGINT ignored, and Python then never turns SIGINT into KeyboardInterrupt.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 300
    while _stored_tests(path) < 1:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.5)  # well inside the second test (tg128 x 4 takes seconds)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    with sqlite3.connect(path) as conn:
        status = conn.execute("select status from runs").fetchall()
        tests = conn.execute("select ordinal, name, status from tests order by ordinal").fetchall()
        first = conn.execute("select count(*) from samples join tests on tests.id = samples.test_id "
                             "where tests.ordinal = 0").fetchone()[0]
    assert status == [("interrupted",)]
    assert tests[0] == (0, "pp512", "ok") and first == 3
    assert tests[1][1:] == ("tg128", "interrupted") and len(tests) == 2


def _processes_with(needle: str) -> list[int]:
    """The pids whose command line mentions ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and needle.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_pdx_leaves_no_server_running(tmp_path, sig):
    # A model file of this test's own, so that the server it starts is told from any other.
    model = str(write_gguf(get_shape("tiny"), "f16", tmp_path / "own.gguf"))
    path = str(tmp_path / "registry.sqlite")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pdx", "bench", "--registry", path, "--backend", "llamacpp-server", "-m", model,
         "-p", "512", "-n", "128", "-r", "50"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    deadline = time.monotonic() + 300
    while _stored_tests(path) < 1:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    (server,) = [p for p in _processes_with(model) if p != proc.pid]
    # Inside tg128 (50 repetitions: seconds), not in the moment between two tests, where no test is in
    # flight to be saved as interrupted (CI once signalled there).
    time.sleep(0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    deadline = time.monotonic() + 30
    while _processes_with(model) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes_with(model), f"llama-server {server} outlived pdx"
    if sig == signal.SIGKILL:  # nothing ran in pdx: the kernel stopped the server (Linux)
        assert proc.returncode == -signal.SIGKILL
        return
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "stopped by SIGTERM; completed tests are saved" in err
    with sqlite3.connect(path) as conn:
        runs = conn.execute("select status, error from runs").fetchall()
        tests = conn.execute("select name, status, error from tests order by ordinal").fetchall()
    assert runs == [("interrupted", "stopped by SIGTERM")]
    assert tests[0][:2] == ("pp512", "ok") and tests[1] == ("tg128", "interrupted", "stopped by SIGTERM")


def test_two_processes_writing_at_once_lose_nothing(tmp_path, tiny_gguf):
    path = str(tmp_path / "registry.sqlite")
    cmd = [sys.executable, "-m", "pdx", "bench", "--registry", path, "--backend", "llamacpp-python",
           "-m", str(tiny_gguf), "-p", "16,32,64", "-n", "4,8", "-r", "5", "--warmup", "0"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    with sqlite3.connect(path) as conn:
        assert conn.execute("select count(*), min(status), max(status) from "
                            "runs").fetchone() == (2, "complete", "complete")
        assert conn.execute("select count(*) from tests").fetchone()[0] == 10
        assert conn.execute("select count(*) from samples").fetchone()[0] == 50


def test_readme_first_command_works_in_a_fresh_copy(tmp_path):
    import shutil

    root = Path(__file__).resolve().parents[1]
    first = re.search(r"```sh\n(.+?)\n", (root / "README.md").read_text())[1]
    assert "pdx bench" in first
    copy = tmp_path / "pdx"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".tox", ".venv", ".git", "__pycache__", "*.egg-info",
                                                              "build", "dist"))
    result = subprocess.run(first, shell=True, cwd=copy, capture_output=True, text=True, timeout=1200,
                            env={**os.environ, "PDX_DATA_DIR": str(tmp_path / "data")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"\bpp512\b.*±", result.stdout) and re.search(r"\btg128\b.*±", result.stdout)
    assert re.search(r"run [0-9a-f]{32} complete", result.stdout)


def test_llama_server_through_the_serving_client(registry_url, tmp_path):
    # Wider than tiny, so tokens take long enough to arrive one by one.
    shape = get_shape("tiny").with_dims(n_embd=512, n_layers=4, n_heads=8, n_kv_heads=8, n_ff=1408)
    model = str(write_gguf(shape, "f16", tmp_path / "small.gguf"))
    server_args = ("--server-args", "-c 4096 -np 4")
    # One server thread: on a 2-core machine the client keeps a core to read the stream with.
    (run,) = bench_json("--registry", registry_url, "--backend", "llamacpp-server", "-m", model, "-p", "64",
                        "-n", "16", "-r", "2", "--threads", "1", *server_args)
    assert run["status"] == "complete", run["error"]
    assert rate(run, "pp64") > 0 and rate(run, "tg16") > 0
    tg = next(t for t in run["tests"] if t["name"] == "tg16")
    assert all(r["n_gen"] == 17 and r["usage"]["completion_tokens"] == 17 for r in tg["requests"])
    # llama-server's own counter: the warm-up and two repetitions, and any sample sent again because
    # its tokens arrived in one burst (on a busy machine)
    assert tg["engine"]["server"]["generation_tokens"] == (3 + tg["engine"].get("burst_retries", 0)) * 17
    assert run["engine"]["settings"]["managed"] and os.path.exists(run["engine"]["details"]["server_log"])
    result = run_pdx("serve-bench", "--backend", "llamacpp-server", "-m", model, "--scenario", "sweep", "-c", "1,4",
                     "-p", "32", "-n", "16", "--num-requests", "8", "--registry", registry_url, "--json", *server_args)
    assert result.returncode == 0, result.stderr
    (sweep,) = json.loads(result.stdout)
    assert [t["stats"]["completed"] for t in sweep["tests"]] == [8, 8]
    assert all(r["engine"]["timings"]["predicted_n"] == 16 for t in sweep["tests"] for r in t["requests"])


def test_in_process_decodes_the_prompt_streams_ids(tiny_gguf):
    """What llama_decode receives, token by token, is the prompt stream's: the ids every other backend
    is fed for the same seed and test (tests/test_prompt_stream.py)."""
    from pdx.contract.backend import BackendConfig
    from pdx.domain.models import identify
    from pdx.base.plugin_manager import get_backend
    from pdx.plugins.llamacpp.inprocess import feed
    from pdx.domain.prompt_stream import PromptStream
    from pdx.domain.workload import TestSpec

    model = identify(tiny_gguf)
    backend = get_backend("llamacpp-python")(BackendConfig(threads=1, seed=11))
    backend.load(model)
    library, seen = backend.lc, []

    class Capturing:
        def __getattr__(self, name):
            return getattr(library, name)

        def llama_decode(self, ctx, batch):
            seen.append([(batch.token[i], batch.pos[i], batch.seq_id[i][0], bool(batch.logits[i]))
                         for i in range(batch.n_tokens)])
            return library.llama_decode(ctx, batch)

    backend.lc = Capturing()
    test = TestSpec(8, 3, 16, batch=2)
    try:
        (sample,) = backend.run(test, 1, 1)
    finally:
        backend.close()
    stream, expected = PromptStream(11, model.n_vocab), []
    for _ in range(2):  # the warm-up, then the repetition: each in one batch per part, one per step
        plan = feed(test, stream.next(test))
        expected += [plan.depth, plan.prompt, *plan.steps]
    assert seen == expected and (sample.n_prompt, sample.n_gen) == (16, 6)
