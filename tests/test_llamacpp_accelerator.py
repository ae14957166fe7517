"""Which accelerator `pdx llamacpp install` builds for, and the CMake flags it picks.

No NVIDIA or AMD GPU exists on this project's machines, so the CUDA tests replay the output
recorded on a real NVIDIA H200 (tests/data/h200/, see its README): a small `nvidia-smi` script on
PATH prints the recorded file, and a stand-in `nvcc` says it is there. PATH holds nothing else, so
the real tools of the test machine (its nvcc, vulkaninfo) do not take part. The Vulkan parser reads
real `vulkaninfo` output of Mesa's software device (tests/data/lavapipe/).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from pdx.contract.errors import PdxError
from pdx.plugins.llamacpp import accelerator, commands

from conftest import assert_one_line_error, run_pdx

DATA = Path(__file__).parent / "data"
H200_QUERY = DATA / "h200" / "nvidia-smi-query.csv"


def _fake_tools(tmp_path: Path, **scripts: str) -> dict:
    """An environment whose PATH holds only the given programs (name -> shell body, builtins only)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in scripts.items():
        tool = bin_dir / name.replace("_", "-")
        tool.write_text("#!/bin/sh\n" + body + "\n")
        tool.chmod(0o755)
    # CUDA_HOME set (to a folder without nvcc) keeps a toolkit in /usr/local/cuda out of the test.
    return {"PATH": str(bin_dir), "PDX_CACHE_DIR": str(tmp_path / "cache"), "CUDA_HOME": str(tmp_path / "no-cuda")}


def _replay(path: Path) -> str:
    """A shell body printing ``path`` with builtins only (PATH has no cat)."""
    return f"while IFS= read -r line || [ -n \"$line\" ]; do printf '%s\\n' \"$line\"; done < '{path}'"


NVCC = "echo 'Cuda compilation tools, release 13.0, V13.0.48'"


def test_the_recorded_h200_with_nvcc_builds_cuda_for_architecture_90_only(tmp_path):
    """Replays the H200's recorded nvidia-smi (no NVIDIA GPU here): CUDA, sm_90 alone, f16 attention, no NCCL."""
    env = _fake_tools(tmp_path, nvidia_smi=_replay(H200_QUERY), nvcc=NVCC)
    result = run_pdx("llamacpp", "install", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("accelerator: cuda\n")
    assert "nvidia-smi: NVIDIA H200 (compute capability 9.0)" in out
    configure = next(line for line in out.splitlines() if line.startswith("configure: "))
    assert "-DGGML_CUDA=ON" in configure and "-DCMAKE_CUDA_ARCHITECTURES=90 " in configure
    assert "-DGGML_CUDA_FA_QUANTS=f16-f16" in configure and "-DGGML_CUDA_NCCL=OFF" in configure
    assert "-DCMAKE_CUDA_COMPILER" not in configure  # nvcc is on PATH
    assert "llama.cpp-0.3.36-cuda-" in out and "(not built yet)" in out
    assert "build: cmake --build BUILD --target llama-bench llama-server llama-quantize" in out
    assert not list((tmp_path / "cache").rglob("llama.cpp-*"))  # a dry run builds nothing


@pytest.mark.parametrize("args", [("--dry-run",), ("--no-bindings",)])
def test_the_recorded_h200_without_nvcc_is_one_line_naming_what_to_install(tmp_path, args):
    """Replays the H200's recorded nvidia-smi with no CUDA toolkit: never a silent CPU build."""
    env = _fake_tools(tmp_path, nvidia_smi=_replay(H200_QUERY))
    assert_one_line_error(run_pdx("llamacpp", "install", *args, env=env),
                          "NVIDIA H200 found but no CUDA toolkit (nvcc)", "install the CUDA toolkit", "--gpu cpu")
    assert not list((tmp_path / "cache").rglob("llama.cpp-*"))


def test_gpu_cpu_builds_for_the_cpu_beside_an_h200_without_toolkit_and_cuda_asked_without_nvcc_fails(tmp_path):
    """Replays the H200's recorded nvidia-smi (no NVIDIA GPU here)."""
    env = _fake_tools(tmp_path, nvidia_smi=_replay(H200_QUERY))
    result = run_pdx("llamacpp", "install", "--dry-run", "--gpu", "cpu", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("accelerator: cpu\n") and "GGML_CUDA" not in result.stdout
    assert_one_line_error(run_pdx("llamacpp", "install", "--dry-run", "--gpu", "cuda",
                                  env=_fake_tools(tmp_path / "bare")),
                          "CUDA needs nvcc, not found here", "--gpu cpu")


def test_nvcc_without_a_gpu_is_the_cpu_quietly(tmp_path):
    """This machine's own case: a CUDA compiler installed, no GPU and no nvidia-smi."""
    result = run_pdx("llamacpp", "install", "--dry-run", env=_fake_tools(tmp_path, nvcc=NVCC))
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("accelerator: cpu\n") and "nvidia-smi: not found" in result.stdout
    assert "GGML_CUDA" not in result.stdout


def test_a_gpu_choice_outside_the_list_is_refused_by_the_cli(tmp_path):
    result = run_pdx("llamacpp", "install", "--dry-run", "--gpu", "opencl", env=_fake_tools(tmp_path))
    assert result.returncode == 2 and "opencl" in result.stderr


def test_the_cli_offers_exactly_the_backends_detection_knows():
    assert commands.GPU_CHOICES == accelerator.CHOICES


# --- parsers ----------------------------------------------------------------------------------------

def test_nvidia_gpus_reads_the_recorded_query_by_its_header():
    """Replays the recorded H200 query: 14 columns, compute_cap the 11th."""
    assert accelerator.nvidia_gpus(H200_QUERY.read_text()) == [("NVIDIA H200", "9.0")]


@pytest.mark.parametrize("text", ["", "\n", "No devices were found\n", "name, compute_cap\n"])
def test_no_gpu_listed_is_no_gpu(text):
    assert accelerator.nvidia_gpus(text) == []


@pytest.mark.parametrize("text", ["name, compute_cap\nNVIDIA H200, [N/A]\n", "name, compute_cap\nNVIDIA H200\n"])
def test_a_gpu_row_without_a_capability_is_a_one_line_error(text):
    with pytest.raises(PdxError, match="nvidia-smi"):
        accelerator.nvidia_gpus(text)


def test_several_gpus_build_every_distinct_capability_once():
    """Decided: all of them, so that every GPU present finds its kernels (a build for the first alone
    would not run on an older second GPU); ordered, each once."""
    text = "name, compute_cap\nNVIDIA H200, 9.0\nNVIDIA A100, 8.0\nNVIDIA H200, 9.0\nNVIDIA RTX 5090, 12.0\n"
    gpus = accelerator.nvidia_gpus(text)
    assert len(gpus) == 4
    assert accelerator.cuda_architectures([cap for _, cap in gpus]) == "80;90;120"


@given(st.text())
def test_nvidia_gpus_on_any_text_is_a_list_or_a_pdx_error(text):
    try:
        gpus = accelerator.nvidia_gpus(text)
    except PdxError as exc:
        assert "\n" not in exc.message
    else:
        assert all(name and cap for name, cap in gpus)


@given(st.lists(st.sampled_from(["5.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"]), min_size=1))
def test_cuda_architectures_are_the_distinct_capabilities_without_the_dot(caps):
    archs = accelerator.cuda_architectures(caps).split(";")
    assert archs == sorted(set(archs), key=int) and {a for a in archs} == {c.replace(".", "") for c in caps}


def test_rocm_targets_are_the_gfx_agents_not_the_cpu():
    text = """*******
Agent 1
*******
  Name:                    AMD EPYC 7763 64-Core Processor
  Marketing Name:          AMD EPYC 7763 64-Core Processor
*******
Agent 2
*******
  Name:                    gfx90a
  Marketing Name:          AMD Instinct MI210
*******
Agent 3
*******
  Name:                    gfx90a
  Name:                    gfx000
"""
    assert accelerator.rocm_targets(text) == ["gfx90a"]
    assert accelerator.rocm_targets("") == [] and accelerator.rocm_targets("garbage\x00") == []


def test_lavapipe_is_a_cpu_device_and_auto_does_not_take_it():
    """Real vulkaninfo output of Mesa's software Vulkan on this project's machine."""
    devices = accelerator.vulkan_devices((DATA / "lavapipe" / "vulkaninfo-summary.txt").read_text())
    assert devices == [("llvmpipe (LLVM 15.0.6, 256 bits)", "PHYSICAL_DEVICE_TYPE_CPU")]


def test_sycl_gpus_are_the_gpu_lines_of_sycl_ls():
    text = ("[opencl:cpu][opencl:0] Intel(R) OpenCL, Intel(R) Xeon(R) Gold 6430 OpenCL 3.0\n"
            "[level_zero:gpu][level_zero:0] Intel(R) Level-Zero, Intel(R) Data Center GPU Max 1100 1.3 [1.3.26918]\n")
    assert accelerator.sycl_gpus(text) == ["Intel(R) Level-Zero, Intel(R) Data Center GPU Max 1100 1.3 [1.3.26918]"]
    assert accelerator.sycl_gpus("") == []


def test_backend_of_old_records():
    assert accelerator.backend_of(["-DGGML_NATIVE=ON"]) in ("cpu", "metal")
    assert accelerator.backend_of(["-DGGML_NATIVE=ON", "-DGGML_VULKAN=ON"]) == "vulkan"
