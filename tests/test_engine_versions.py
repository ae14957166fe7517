"""``pdx bench --engine-version A,B`` for real, on the stand-in engine (tests/standin_engine.py): two
of its commits built with CMake where ``pdx llamacpp install --version`` keeps a CPU build (in this
test's own PDX_CACHE_DIR), so pdx finds them as two cached llama-cpp-python releases. The stand-in's
llama-bench logs each call's commit (STANDIN_CALLS): the order of the real calls shows the
repetitions taken in turn. Real llama-cpp-python releases take many minutes each to build on this
machine: tests/benchmarks/engine_versions.py builds and runs two."""

from __future__ import annotations

import json

import pytest

from conftest import pdx_here, run_pdx_here
from standin_engine import TOOLS, install_as_release, make_repo

pytestmark = pytest.mark.skipif(not TOOLS, reason="needs git, cmake and a C compiler")
VERSIONS = ("0.3.90", "0.3.91")
REPETITIONS = 4


@pytest.fixture
def releases(tmp_path, monkeypatch) -> list[str]:
    """The stand-in at two commits (the second does three times the work), cached as VERSIONS."""
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))
    commits = make_repo(tmp_path / "engine", [20000, 60000])
    for commit, version in zip(commits, VERSIONS):
        install_as_release(tmp_path / "engine", commit, version)
    return commits


def test_two_versions_run_the_same_workload_interleaved_into_two_runs(releases, tiny_gguf, tmp_path, monkeypatch):
    calls = tmp_path / "calls"
    monkeypatch.setenv("STANDIN_CALLS", str(calls))
    url = f"sqlite:///{tmp_path / 'versions.sqlite'}"
    result = run_pdx_here("bench", "--engine-version", ",".join(VERSIONS), "-m", str(tiny_gguf), "-p", "64",
                          "-n", "16", "-r", str(REPETITIONS), "-t", "1", "--no-energy",
                          "--registry", url, "--json")
    assert result.returncode == 0, result.stderr
    for version in VERSIONS:
        assert f"{version}: llama.cpp" in result.stderr and "(cached)" in result.stderr
    runs = json.loads(result.stdout)
    assert [r["engine"]["commit"] for r in runs] == [c[:7] for c in releases]  # one run per version, in order
    assert [r["engine"]["details"]["built_from"] for r in runs] == [f"llama-cpp-python {v}" for v in VERSIONS]
    assert all(r["backend"] == "llamacpp-bench" and r["status"] == "complete" for r in runs)
    assert [t["name"] for t in runs[0]["tests"]] == [t["name"] for t in runs[1]["tests"]] == ["pp64", "tg16"]
    for test in (t for r in runs for t in r["tests"]):
        assert len(test["samples"]) == REPETITIONS
    # The calls alternate A B A B within each test; each version's tests span the other's.
    a, b = (c[:7] for c in releases)
    assert calls.read_text().split() == [a, b] * REPETITIONS * 2
    for mine, other in ((runs[0], runs[1]), (runs[1], runs[0])):
        for test, rival in zip(mine["tests"], other["tests"]):
            assert test["started_at"] <= rival["finished_at"] and rival["started_at"] <= test["finished_at"]
    shown = pdx_here("show", runs[1]["id"], "--registry", url)
    assert f"(built from llama-cpp-python {VERSIONS[1]})" in shown
    # both are in the registry
    stored = json.loads(pdx_here("runs", "--registry", url, "--json"))
    assert sorted(r["id"] for r in stored) == sorted(r["id"] for r in runs)


def test_a_release_that_is_not_built_is_built_on_demand_and_a_failed_build_is_one_line(releases, tiny_gguf,
                                                                                       tmp_path):
    """A version with no cached build goes to `pdx llamacpp install`, which looks for its source in
    the cache's src folder before asking pip: here a file that is no source release, so the build
    fails at once, and with one line."""
    src = tmp_path / "cache" / "engines" / "src"
    src.mkdir(parents=True)
    (src / "llama_cpp_python-0.0.1.tar.gz").write_bytes(b"not a tarball")
    result = run_pdx_here("bench", "--engine-version", f"{VERSIONS[0]},0.0.1", "-m", str(tiny_gguf), "-p", "16",
                          "-n", "0", "-r", "2", "--registry", f"sqlite:///{tmp_path / 'x.sqlite'}")
    assert result.returncode == 2
    assert "0.0.1: no cached build; building it now" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("pdx: error: ")
    assert json.loads(pdx_here("runs", "--registry", f"sqlite:///{tmp_path / 'x.sqlite'}", "--json")) == []


@pytest.mark.parametrize("args, message", [
    (["--backend", "vllm"], "--engine-version: backend vllm runs the one version installed; pdx cannot run several "
                            "versions of its engine yet; backends that can: llamacpp-bench"),
    (["--backend", "mlx"], "--engine-version: backend mlx runs the one version installed"),
    (["-t", "1,2"], "--engine-version runs one workload per version; the options make 2 runs"),
    (["--engine-version", "0.3.36,../x"], "--engine-version '../x' is not a version"),
    (["--engine-version", "0.3.36,0.3.36"], "give different versions, comma-separated"),
])
def test_what_engine_version_cannot_do_is_one_line(tmp_path, tiny_gguf, args, message):
    result = run_pdx_here("bench", "--engine-version", "0.3.35,0.3.36", "-m", str(tiny_gguf), "-p", "16", *args,
                          "--registry", f"sqlite:///{tmp_path / 'x.sqlite'}")
    assert result.returncode == 2 and message in result.stderr, result.stderr
