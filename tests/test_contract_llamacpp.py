"""The backend contract suite (pdx.testing) against every llama.cpp backend, and the
generic openai backend against a real llama-server beside the llamacpp plugin's own
server backend."""

from __future__ import annotations

import json
import math

import pytest

from pdx.testing import BackendContract, count_calls

from conftest import run_pdx, timed_or_burst
from test_llamacpp import rate

pytestmark = pytest.mark.llamacpp


class _CountingLibrary:
    """llama-cpp-python's module, with ``llama_decode`` counting the tokens of each batch."""

    def __init__(self, library) -> None:
        self._library = library
        self.tokens = 0

    def __getattr__(self, name):
        return getattr(self._library, name)

    def llama_decode(self, ctx, batch):
        self.tokens += batch.n_tokens
        return self._library.llama_decode(ctx, batch)


def _bench_runs(test, repetitions, warmup):
    """Runs llama-bench is told to do for a test: -r, plus its own warm-up unless --no-warmup."""
    return (repetitions + max(0, warmup - 1) + (1 if warmup else 0)) * (test.depth + test.n_prompt + test.n_gen)


class TestLlamaPython(BackendContract):
    backend = "llamacpp-python"

    @classmethod
    def work_counter(cls, backend):
        backend.lc = counting = _CountingLibrary(backend.lc)
        return lambda: counting.tokens


class TestLlamaBench(BackendContract):
    backend = "llamacpp-bench"

    @classmethod
    def work_counter(cls, backend):
        return count_calls(backend, "command", _bench_runs)


class TestLlamaCppFirstInstalled(BackendContract):
    backend = "llamacpp"  # llama-bench here, through the delegating backend

    @classmethod
    def work_counter(cls, backend):
        return count_calls(backend.delegate, "command", _bench_runs)


class TestLlamaServer(BackendContract):
    backend = "llamacpp-server"


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """A llama-server of pdx's build, as a user would start one, serving a small model."""
    from pdx.plugins.llamacpp.locate import find_llama_server
    from pdx.measure.serving.managed import ManagedServer, free_port
    from pdx.domain.synth import get_shape, write_gguf
    from pdx.testing.target import STREAMING_DIMS

    folder = tmp_path_factory.mktemp("llama-server")
    model = write_gguf(get_shape("tiny").with_dims(**STREAMING_DIMS), "f16", folder / "small.gguf")
    port = free_port()
    command = [str(find_llama_server()), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "--metrics",
               "-t", "1"]
    server = ManagedServer("llama-server", command, port, folder / "server.log", startup_timeout_s=120)
    server.start()
    yield server
    server.stop()


class TestOpenAIOnLlamaServer(BackendContract):
    backend = "openai"

    @pytest.fixture(scope="class")
    @classmethod
    def pdx_target(cls, llama_server):
        from pdx.testing import Target

        return Target("openai", options={"url": llama_server.url})


def test_openai_backend_measures_llama_server_beside_the_llamacpp_plugin(llama_server, registry_url):
    """The same llama-server measured through its own /completion (llamacpp-server) and through
    /v1/completions (openai), in one registry: the same served file and build, and the same work,
    request by request. How close their rates come is a benchmark (tests/benchmarks/server_paths.py)."""
    runs = {}
    for seed, backend in enumerate(("llamacpp-server", "openai"), 1):  # a seed each: no cached prompts
        result = run_pdx("bench", "--backend", backend, "--url", llama_server.url, "-p", "64", "-n", "32",
                         "-r", "2", "--seed", str(seed), "--registry", registry_url, "--json")
        (runs[backend],) = json.loads(result.stdout)
        assert result.returncode in (0, 1), result.stderr
    own, generic = runs["llamacpp-server"], runs["openai"]
    assert own["model"]["sha256"] == generic["model"]["sha256"]  # the served file, identified by both
    assert generic["engine"]["version"] == own["engine"]["version"]  # asked of the server: its build
    for run in (own, generic):
        tests = {t["name"]: t for t in run["tests"]}
        assert list(tests) == ["pp64", "tg32"]
        assert tests["pp64"]["status"] == "ok" and 0 < rate(run, "pp64") < math.inf  # a TTFT cannot come in a burst
        assert all((r["n_prompt"], r["max_tokens"]) == (64, 1) for r in tests["pp64"]["requests"])
        assert all((r["n_prompt"], r["max_tokens"]) == (1, 33) for r in tests["tg32"]["requests"])
        for test in tests.values():
            if timed_or_burst(test):
                assert len(test["samples"]) == 2 and 0 < rate(run, test["name"]) < math.inf
    # llama-server's own counters saw the tokens pdx counted, sample by sample.
    for test in own["tests"]:
        for sample in test["samples"]:
            assert sample["engine"]["prompt_tokens"] == sample["n_prompt"] or test["name"] == "tg32"
            assert sample["engine"]["generation_tokens"] == (1 if test["name"] == "pp64" else 33)


def test_a_server_that_has_seen_the_prompts_is_caught(llama_server, registry_url):
    """The same seed twice on one server: the second pp run would time cached prompts; pdx refuses it."""
    args = ("bench", "--backend", "openai", "--url", llama_server.url, "-p", "64", "-n", "0", "-r", "1",
            "--seed", "77", "--registry", registry_url, "--json")
    assert run_pdx(*args).returncode == 0
    result = run_pdx(*args)
    assert result.returncode == 1, result.stderr
    (run,) = json.loads(result.stdout)
    assert "prefix cache already held" in run["tests"][0]["error"]
