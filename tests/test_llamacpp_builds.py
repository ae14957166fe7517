"""pdx's llama.cpp builds side by side, one per backend: their folders (the CPU's as before backends
existed), which one runs, what `pdx llamacpp info` lists, the version pdx shows, and the compile's
progress. Builds here are folders with stub binaries (a real compile takes many minutes; tox -e
llamacpp and tox -e vulkan build for real)."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import given, strategies as st

from pdx.contract.errors import PdxError
from pdx.plugins.llamacpp import build, locate
from pdx.plugins.llamacpp.accelerator import Accelerator, detect
from pdx.plugins.llamacpp.progress import NinjaProgress, ninja_step

from conftest import assert_one_line_error, run_pdx


@pytest.fixture
def cache(monkeypatch, tmp_path) -> Iterator[Path]:
    """A private pdx cache, and a PATH with no GPU tools and no llama-bench: the machine is a CPU."""
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))  # never the shared build cache
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv(build.GPU_ENV, raising=False)
    build.machine_backend.cache_clear()
    yield tmp_path / "cache"
    build.machine_backend.cache_clear()


def _stub_build(gpu: str, built_at: str, record: dict | None = None) -> Path:
    flags = build.cmake_flags(detect("cpu") if gpu == "cpu" else Accelerator(gpu, (f"-DGGML_{gpu.upper()}=ON",)))
    root = build.build_dir(build.LLAMA_CPP_PYTHON_VERSION, flags, gpu)
    (root / "bin").mkdir(parents=True)
    for tool in build.TARGETS:
        (root / "bin" / tool).write_text("stub")
    data = {"version": build.LLAMA_CPP_PYTHON_VERSION, "commit": "0c1e570", "build_number": None, "flags": flags,
            "gpu": gpu, "built_at": built_at}
    (root / build.BUILD_RECORD).write_text(json.dumps(record or data))
    return root


@pytest.mark.skipif(platform.machine() != "x86_64" or sys.platform != "linux", reason="the pinned folder is x86-64 "
                    "Linux's")
def test_the_cpu_build_keeps_the_folder_it_had_before_backends(cache):
    """The cached CPU build (and CI's caches) must stay valid: same flags, same key, no backend in the name."""
    assert build.cmake_flags() == build.cmake_flags(detect("cpu")) == [
        "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF", "-DGGML_NATIVE=ON", "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
        "-DCMAKE_INSTALL_RPATH=$ORIGIN", "-DCMAKE_C_FLAGS=-mno-amx-int8", "-DCMAKE_CXX_FLAGS=-mno-amx-int8"]
    assert build.build_dir("0.3.36", build.cmake_flags()).name == "llama.cpp-0.3.36-0991617d87"
    vulkan = build.build_dir("0.3.36", build.cmake_flags(Accelerator("vulkan", ("-DGGML_VULKAN=ON",))), "vulkan")
    assert vulkan.name.startswith("llama.cpp-0.3.36-vulkan-") and vulkan.parent == build.builds_root()


def test_the_build_for_this_machine_runs_unless_another_is_asked_for(cache, monkeypatch):
    cpu = _stub_build("cpu", "2026-01-01T00:00:00+00:00")
    vulkan = _stub_build("vulkan", "2026-02-01T00:00:00+00:00")  # newer, but this machine has no GPU
    assert build.find_build().root == cpu and build.find_build().gpu == "cpu"
    assert locate.find_llama_bench() == cpu / "bin" / "llama-bench"
    monkeypatch.setenv(build.GPU_ENV, "vulkan")
    assert build.find_build().root == vulkan and locate.find_llama_bench() == vulkan / "bin" / "llama-bench"
    monkeypatch.setenv(build.GPU_ENV, "cuda")
    assert build.find_build() is None
    with pytest.raises(PdxError, match="PDX_LLAMACPP_GPU=cuda: no pdx build") as err:
        locate.find_llama_bench()
    assert "pdx llamacpp install --gpu cuda" in err.value.hint
    monkeypatch.setenv(build.GPU_ENV, "opencl")
    with pytest.raises(PdxError, match="PDX_LLAMACPP_GPU='opencl' is not a llama.cpp backend"):
        build.find_build()


def test_one_backend_cached_is_used_without_asking_the_machine(cache, monkeypatch):
    vulkan = _stub_build("vulkan", "2026-02-01T00:00:00+00:00")
    monkeypatch.setattr(build, "present", lambda: pytest.fail("detection ran with one backend cached"))
    assert build.find_build().root == vulkan


def test_a_build_recorded_before_backends_reads_as_cpu_without_its_fake_build_number(cache):
    flags = build.cmake_flags()
    _stub_build("cpu", "2025-06-01T00:00:00+00:00", {"version": "0.3.36", "commit": "0c1e570", "build_number": 1,
                                                      "flags": flags, "built_at": "2025-06-01T00:00:00+00:00"})
    found = build.find_build()
    assert (found.gpu, found.build_number, found.label) == ("cpu", None, "llama.cpp 0c1e570 (cpu)")


def test_info_lists_every_build_with_its_backend(cache):
    _stub_build("cpu", "2026-01-01T00:00:00+00:00")
    _stub_build("vulkan", "2026-02-01T00:00:00+00:00")
    result = run_pdx("llamacpp", "info")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("  vulkan ") and "llama.cpp 0c1e570 (vulkan)" in lines[0]  # newest first
    assert lines[1].startswith("* cpu ")  # the one pdx uses here
    assert "PDX_LLAMACPP_GPU=" in lines[2]
    assert_one_line_error(run_pdx("llamacpp", "info", env={build.GPU_ENV: "tpu"}), "PDX_LLAMACPP_GPU='tpu'")


def test_install_records_the_backend_and_no_build_number(cache, monkeypatch):
    def fake_compile(sdist, tmp, flags, targets, jobs, log, env=None, progress=None):  # stands in for cmake
        (tmp / "build" / "bin").mkdir(parents=True)
        for target in targets:
            (tmp / "build" / "bin" / target).write_text("#!/bin/sh\necho 'version: 0.5.0-dev (build 1, commit "
                                                        "0c1e570)'\n")
            (tmp / "build" / "bin" / target).chmod(0o755)
        for done in range(1, 21):
            progress.feed(f"[{done}/20] Building CXX object x.o\n")
        return tmp / "build"

    monkeypatch.setattr(build, "_compile", fake_compile)
    monkeypatch.setattr(build, "_sdist", lambda version, log: Path("unused.tar.gz"))
    monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/bin/cmake" if name == "cmake" else None)
    said: list[str] = []
    result = build.install(bindings=False, gpu="cpu", say=said.append)
    record = json.loads((result.root / build.BUILD_RECORD).read_text())
    assert record["gpu"] == "cpu" and record["commit"] == "0c1e570" and record["build_number"] is None
    assert said[-1] == "built llama.cpp 0c1e570 (cpu)"
    assert sum("steps" in line for line in said) == 10  # a line per tenth: a CI log stays short


def _fake_llama_bench(tmp_path: Path, number: int) -> Path:
    tool = tmp_path / "llama-bench"
    tool.write_text(f"#!/bin/sh\necho 'version: 0.5.0-dev (build {number}, commit 0c1e570)'\n"
                    "echo 'built with GNU 12.2.0 for Linux x86_64'\n")
    tool.chmod(0o755)
    return tool


@pytest.mark.parametrize(("number", "label", "kept"), [(1, "0c1e570", None), (0, "0c1e570", None),
                                                       (6500, "b6500 (0c1e570)", 6500)])
def test_the_version_shows_a_build_number_only_where_it_is_llama_cpps(tmp_path, number, label, kept):
    """llama-cpp-python's sdist holds a shallow clone (count 1), a tarball none (0): neither is a build number."""
    tool = _fake_llama_bench(tmp_path, number)
    assert build.version_label(tool) == label and build.tool_version(tool) == ("0c1e570", kept)


# --- progress ----------------------------------------------------------------------------------------

class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_in_a_log_is_a_line_per_tenth_with_the_time_left():
    written, clock = [], _Clock()
    progress = NinjaProgress(written.append, live=False, clock=clock)
    for done in range(1, 201):
        clock.now = done * 3.0  # 3 s a step
        progress.feed(f"[{done}/200] Building CXX object ggml/src/x{done}.o\n")
        if done == 50:
            progress.feed("[1/4] Building CXX object vulkan-shaders-gen.o\n")  # a nested project: not ours
    progress.close()
    assert len(written) == 10 and all(line.endswith("\n") for line in written)
    assert written[0] == "compiling: 20/200 steps (10%), 60 s so far, about 9 min left\n"
    assert written[-1] == "compiling: 200/200 steps (100%), 10 min so far\n"


def test_progress_on_a_terminal_redraws_one_line():
    written = []
    progress = NinjaProgress(written.append, live=True, clock=_Clock())
    for line in ["-- Configuring done", "[1/3] a", "[2/3] b", "ninja: no work to do", "[3/3] c"]:
        progress.feed(line)
    progress.close()
    assert len(written) == 4 and all(w.startswith("\r") for w in written[:3]) and written[-1] == "\n"


@given(st.text())
def test_ninja_step_reads_only_real_steps(line):
    step = ninja_step(line)
    assert step is None or 0 < step[0] <= step[1]
