"""The one GPU check (tests/gpu/run_all.sh) as far as a machine without a GPU can take it: the scripts
parse, the run command in their headers fits the device tool, and the trimmed llama.cpp source keeps what
a CUDA build compiles. Its logic runs end to end with ``PDX_GPU_CHECK_DRY=1`` (a CPU build, a tiny model),
by hand: it needs the llama.cpp build, so it is no part of this suite."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GPU = Path(__file__).with_name("gpu")
sys.path.insert(0, str(GPU))
import trim_llama_source  # noqa: E402

LLAMA = "llama_cpp_python-0.3.36/vendor/llama.cpp/"


@pytest.mark.parametrize("script", ["run_all.sh", "prepare.sh"])
def test_the_scripts_parse_and_name_one_run_command_that_fits(script):
    assert subprocess.run(["bash", "-n", str(GPU / script)], capture_output=True).returncode == 0
    (command,) = set(re.findall(r'run\(command="([^"]+)"', (GPU / script).read_text()))
    assert command == "bash tests/gpu/run_all.sh .gpu-check" and len(command) < 2000


def test_only_one_script_runs_the_gpu_check():
    assert sorted(p.name for p in GPU.glob("run_*.sh")) == ["run_all.sh", "run_vllm_cuda.sh"]  # vLLM: 60 MiB too few


@pytest.mark.parametrize("name, kept", [
    (LLAMA + "ggml/src/ggml-cuda/fattn.cu", True),
    (LLAMA + "ggml/src/ggml-cuda/template-instances/fattn-vec-instance-f16-f16.cu", True),
    (LLAMA + "ggml/src/ggml-cpu/ggml-cpu.c", True),
    (LLAMA + "ggml/src/ggml-hip/CMakeLists.txt", True),
    (LLAMA + "ggml/src/CMakeLists.txt", True),
    (LLAMA + "tools/llama-bench/llama-bench.cpp", True),
    (LLAMA + "tools/server/server.cpp", True),
    (LLAMA + "tools/ui/CMakeLists.txt", True),
    (LLAMA + "app/CMakeLists.txt", True),
    (LLAMA + "vendor/cpp-httplib/httplib.cpp", True),
    (LLAMA + "tests/CMakeLists.txt", True),  # listed by CMake even when off
    (LLAMA + "ggml/src/ggml-vulkan/ggml-vulkan.cpp", False),
    (LLAMA + "ggml/src/ggml-metal/ggml-metal.m", False),
    (LLAMA + "ggml/src/ggml-sycl/ggml-sycl.cpp", False),
    (LLAMA + "docs/ops/CUDA.csv", False),
    (LLAMA + "models/ggml-vocab-llama-bpe.gguf", False),
    (LLAMA + "tests/test-backend-ops.cpp", False),
    (LLAMA + "tools/ui/src/app.ts", False),
    (LLAMA + "README.md", False),
    ("llama_cpp_python-0.3.36/llama_cpp/llama.py", False),  # the bindings: not built on the GPU machine
    ("llama_cpp_python-0.3.36/.git/modules/vendor/llama.cpp/objects/pack/x.pack", False),
])
def test_the_trimmed_source_keeps_what_a_cuda_build_compiles(name, kept):
    assert trim_llama_source.keep(name) is kept


def test_the_trimmed_source_configures_for_the_cpu(tmp_path):
    """The real source release from pdx's cache, trimmed, configured and every input of pdx's targets found
    (ninja's dry run); skipped where the release or cmake and ninja are absent."""
    from pdx.base.paths import cache_dir
    from pdx.plugins.llamacpp.build import LLAMA_CPP_PYTHON_VERSION, cmake_flags

    sdist = cache_dir("engines", "src") / f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}.tar.gz"
    if not (sdist.exists() and shutil.which("cmake") and shutil.which("ninja")):
        pytest.skip("needs llama-cpp-python's source in pdx's cache, cmake and ninja")
    out = tmp_path / "trimmed.tar.gz"
    members, size = trim_llama_source.trim(sdist, out)
    assert size < 8 * 2**20 and members > 500
    subprocess.run(["tar", "-xzf", str(out), "-C", str(tmp_path)], check=True)
    source = next(tmp_path.glob("*/vendor/llama.cpp"))
    subprocess.run(["cmake", "-S", str(source), "-B", str(tmp_path / "b"), "-G", "Ninja", *cmake_flags()],
                   check=True, capture_output=True)
    dry = subprocess.run(["ninja", "-n", "-C", str(tmp_path / "b"), "llama-bench", "llama-server", "llama-quantize"],
                         capture_output=True, text=True)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
