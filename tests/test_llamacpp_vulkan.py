"""llama.cpp's Vulkan backend for real, over Mesa's software Vulkan (lavapipe): tox -e vulkan installs
it (tests/vulkan/vulkan.sh) and runs `pdx llamacpp install --gpu vulkan` beside the CPU build first."""

from __future__ import annotations

import json
import re

import pytest

from pdx.plugins.llamacpp.build import GPU_ENV, all_builds, find_build

from conftest import run_pdx

pytestmark = pytest.mark.vulkan
# llama.cpp's Vulkan backend skips devices of type CPU unless named: lavapipe is device 0 here.
LAVAPIPE = {"GGML_VK_VISIBLE_DEVICES": "0"}


def test_a_bench_on_the_vulkan_build_runs_on_vulkan_with_every_layer_offloaded(registry_url, tiny_gguf):
    vulkan = find_build(gpu="vulkan")
    assert vulkan is not None, "no Vulkan build: run `pdx llamacpp install --gpu vulkan` (tox -e vulkan does)"
    result = run_pdx("bench", "--registry", registry_url, "--backend", "llamacpp-bench", "-m", str(tiny_gguf),
                     "-p", "32", "-n", "8", "-r", "2", env={GPU_ENV: "vulkan", "COLUMNS": "200", **LAVAPIPE})
    assert result.returncode == 0, result.stderr
    assert "llamacpp-bench (Vulkan" in result.stdout, result.stdout  # the table's backend column
    run_id = re.search(r"run ([0-9a-f]{32}) complete", result.stdout)[1]
    shown = json.loads(run_pdx("show", run_id, "--registry", registry_url, "--json").stdout)
    assert shown["engine"]["details"]["llama_bench"] == str(vulkan.tool("llama-bench"))
    assert shown["engine"]["settings"]["n_gpu_layers"] == 99
    for test in shown["tests"]:
        assert test["status"] == "ok", test["error"]
        # llama-bench's own record of the binary's backends, and the device it ran on.
        assert "Vulkan" in test["engine"]["backends"], test["engine"]
        assert test["engine"]["n_gpu_layers"] == 99


def test_the_cpu_build_still_runs_by_default_beside_the_vulkan_one():
    """lavapipe is a CPU device: with no choice made, pdx keeps measuring the CPU build."""
    backends = {b.gpu for b in all_builds()}
    if "cpu" not in backends:
        pytest.skip("no CPU build cached beside the Vulkan one")
    assert find_build().gpu == "cpu"
