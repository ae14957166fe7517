"""Device probes: MLX (for real, mlx-marked: MLX's CPU device here), CUDA through
torch (for real where torch sees a GPU, else skipped), the device names, the
one-line errors, and the tests/gpu checker.

No GPU exists on the machines this suite runs on: tests/gpu/run_all.sh
runs the CUDA probe and a vLLM bench on a lent one. The checker's own test here
feeds it figures written for the test (not recorded), a fraction of the H200's
catalog figures, to show it passes a plausible probe and fails an impossible one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pdx.measure import ceiling_sources as sources
from pdx.contract.errors import PdxError
from pdx.domain.hardware import catalog
from pdx.measure.hardware import probe

SMALL = {"array_bytes": 8 * 2**20, "matmul_n": 128, "reps": 2}
CHECKER = Path(__file__).parent / "gpu" / "check_device_probes.py"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))


def test_device_names():
    assert probe.device_name("cpu") == "cpu" and probe.device_name("CUDA") == "cuda:0"
    assert probe.device_name("cuda:1") == "cuda:1" and probe.device_name("mlx:gpu") == "mlx:gpu"
    assert probe.device_name("mlx") in ("mlx:gpu", "mlx:cpu")
    for bad in ("tpu", "cuda:x", "mlx:npu", "cpu:0"):
        with pytest.raises(PdxError, match="unknown probe device"):
            probe.device_name(bad)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.skipif(_has("torch"), reason="torch is installed: the missing-package error cannot happen")
def test_a_device_probe_without_its_package_is_a_one_line_error():
    from conftest import assert_one_line_error, run_pdx_here

    assert_one_line_error(run_pdx_here("hw", "probe", "--device", "cuda"), "torch is not installed",
                          "CUDA build of torch")


@pytest.mark.skipif(_has("mlx"), reason="MLX is installed here")
def test_hw_probe_of_mlx_without_mlx_says_so_not_another_environment_s_cache():
    """A probe another environment (one with MLX) cached on this machine is not shown where MLX is
    not installed: one line, non-zero exit."""
    from conftest import assert_one_line_error, run_pdx

    from pdx.domain import hardware

    machine, threads = hardware.detect()["id"], hardware.default_threads()
    device = probe.device_name("mlx")
    path = probe.device_cache_path(machine, device, threads, probe.device_sizes(device))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"device": device, "threads": threads, "measured_at": "2026-01-01T00:00:00+00:00",
                                "bandwidth": {"best": 1e11, "copy": 1e11, "read": 1e11, "repetitions": 1,
                                              "array_bytes": 2**20},
                                "matmul": {"f32": {"flops": 1e12, "dtype": "float32", "n": 256, "repetitions": 1}}}))
    line = assert_one_line_error(run_pdx("hw", "probe", "--device", "mlx"), "MLX is not installed")
    assert "GB/s" not in line


def test_device_sizes_only_for_device_probes():
    from conftest import run_pdx_here

    result = run_pdx_here("hw", "probe", "--matmul-n", "64")
    assert result.returncode != 0 and "sizes are for device probes" in result.stderr


def _check_shape(result: dict, device: str, dtypes: tuple[str, ...]) -> None:
    assert result["device"] == device and result["sizes"] == SMALL
    bw = result["bandwidth"]
    for kernel in ("copy", "read"):
        assert 0 < bw[kernel] < float("inf") and len(bw["samples"][kernel]) == 2
    assert bw["best"] == max(bw["copy"], bw["read"])
    for key in dtypes:
        mm = result["matmul"][key]
        assert mm["n"] == 128 and len(mm["samples"]) == 2 and 0 < mm["flops"] < float("inf")
    assert set(result["method"]) == {"bandwidth", "matmul"}


@pytest.mark.mlx
def test_mlx_probe_on_mlxs_cpu_device_stores_every_data_type(tmp_path):
    """`pdx hw probe --device mlx` for real, in a fresh interpreter, small sizes."""
    args = ["-m", "pdx", "hw", "probe", "--device", "mlx:cpu", "--array-mib", "8", "--matmul-n", "128", "--reps", "2"]
    env = {"PDX_CACHE_DIR": str(tmp_path / "cache")}
    import os

    first = subprocess.run([sys.executable, *args, "--json"], capture_output=True, text=True, env=os.environ | env,
                           timeout=600)
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    _check_shape(result, "mlx:cpu", ("f16", "bf16", "f32", "q8", "q4"))
    assert result["cached"] is False and result["device_info"]
    again = json.loads(subprocess.run([sys.executable, *args, "--json"], capture_output=True, text=True,
                                      env=os.environ | env, timeout=600).stdout)
    assert again["cached"] is True and again["bandwidth"] == result["bandwidth"]
    shown = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=os.environ | env, timeout=600)
    assert "q4" in shown.stdout and "mlx:cpu" in shown.stdout
    # The ceilings read it as they read the CPU probe, in the model's own data type where it was measured.
    figures = sources.probe_figures(result, "fp16")
    assert figures.flops == result["matmul"]["f16"]["flops"] and figures.bandwidth == result["bandwidth"]["best"]
    assert "probe mlx:cpu" in figures.label
    assert sources.probe_figures(result, "int8").flops == result["matmul"]["q8"]["flops"]


def _cuda() -> bool:
    if not _has("torch"):
        return False
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _cuda(), reason="needs torch with a CUDA GPU (tests/gpu/run_all.sh)")
def test_cuda_probe_through_torch():
    result = probe.measure("gpu-test", 1, device="cuda", **SMALL)
    _check_shape(result, "cuda:0", ("f16", "bf16", "f32"))
    assert result["device_info"]["device_name"] and result["torch"]


def _constructed_h200_probe(share: float) -> dict:
    chip = catalog.get("nvidia-h200")
    flops = {k: {"flops": share * chip.dense_flops(d), "dtype": d, "n": 8192, "repetitions": 10, "samples": []}
             for k, d in (("f16", "fp16"), ("bf16", "bf16"), ("i8", "int8"))}
    return {"device": "cuda:0", "device_info": {"device_name": "NVIDIA H200"}, "torch": "test",
            "bandwidth": {"copy": share * chip.bandwidth, "read": share * chip.bandwidth}, "matmul": flops}


@pytest.mark.parametrize("share, ok", [(0.8, True), (1.3, False), (0.05, False)])
def test_the_gpu_checker_prints_beside_the_catalog_and_judges(tmp_path, share, ok):
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(_constructed_h200_probe(share)))
    out = subprocess.run([sys.executable, str(CHECKER), str(path)], capture_output=True, text=True, timeout=60)
    assert (out.returncode == 0) == ok, out.stdout + out.stderr
    assert "NVIDIA H200" in out.stdout and "NVIDIA H100 SXM" in out.stdout and f"{share:.0%}" in out.stdout
