"""The bandwidth and matmul probes (small arrays here; the spread of the
full-size probes is printed by tests/benchmarks/probe_spread.py), their
cache, and how a run picks catalog or probe figures."""

import json

import pytest

from pdx import ceilings
from pdx.hardware import probe

SMALL = {"array_bytes": 4 * 2**20, "matmul_n": 128, "bandwidth_reps": 2, "matmul_reps": 2}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("threads", [1, 2])
def test_probes_measure_every_kernel_and_record_their_method(threads):
    result = probe.run(threads, **SMALL)
    bw, mm = result["bandwidth"], result["matmul"]["f32"]
    assert result["threads"] == bw["threads"] == threads
    for kernel in ("copy", "triad", "read"):
        # A rate, positive and finite; no floor: a floor is a timing bound, and the suite runs on busy machines.
        assert 0 < bw[kernel] < float("inf") and len(bw["samples"][kernel]) == 2
    assert bw["best"] == max(bw["copy"], bw["triad"], bw["read"]) and bw["best_kernel"] in ("copy", "triad", "read")
    assert bw["array_bytes"] == 4 * 2**20
    assert 0 < mm["flops"] < float("inf") and mm["n"] == 128 and mm["dtype"] == "float32" and mm["blas"]
    assert "read + written" in result["method"]["bandwidth"] and "float32 GEMM" in result["method"]["matmul"]


def test_results_are_cached_per_machine_and_threads_until_forced():
    first = probe.measure("machine-a", 1, **SMALL)
    again = probe.measure("machine-a", 1, **SMALL)
    assert (first["cached"], again["cached"]) == (False, True)
    assert again["bandwidth"] == first["bandwidth"] and again["machine"] == "machine-a"
    assert probe.measure("machine-a", 2, **SMALL)["cached"] is False  # another thread count, another probe
    forced = probe.measure("machine-a", 1, force=True, **SMALL)
    assert forced["cached"] is False and forced["bandwidth"]["samples"] != first["bandwidth"]["samples"]
    assert json.loads(probe.cache_path("machine-a", 1).read_text())["measured_at"] == forced["measured_at"]


F16_MODEL = {"name": "m", "dtype": "F16", "file_bytes": 4e8, "n_params": 2e8}


def test_a_cpu_run_is_judged_by_the_probes_at_its_thread_count():
    probe.measure("cpu-box", 2, **SMALL)  # cached, so resolve() reads it rather than probing at full size
    figures, basis = ceilings.resolve({"id": "cpu-box", "kind": "cpu", "catalog": None}, F16_MODEL, 2)
    assert figures.source == basis["source"] == "probe" and basis["probe"]["threads"] == 2
    assert figures.bandwidth == basis["probe"]["bandwidth"]["best"] and figures.flops_dtype == "f32 sgemm"


def test_a_gpu_run_uses_its_catalog_entry_and_a_name_overrides_detection():
    h100 = {"id": "x", "kind": "gpu", "name": "NVIDIA H100 80GB HBM3", "catalog": "nvidia-h100-sxm"}
    figures, basis = ceilings.resolve(h100, F16_MODEL, 8)
    assert (figures.source, figures.ref, figures.flops_dtype) == ("catalog", "nvidia-h100-sxm", "fp16")
    assert basis["chip"]["bandwidth_gbs"]["url"].startswith("https://")
    figures, _ = ceilings.resolve(h100, F16_MODEL | {"dtype": "Q4_0"}, 8, name="rtx 4090")
    assert (figures.ref, figures.flops_dtype, figures.bandwidth) == ("nvidia-rtx-4090", "int8", 1008e9)


def test_probe_as_a_name_judges_an_accelerator_machine_by_its_cpu():
    probe.measure("soc-box", 4, **SMALL)
    strix = {"id": "soc-box", "kind": "soc", "name": "AMD RYZEN AI MAX+ 395", "catalog": "amd-ryzen-ai-max-395"}
    assert ceilings.resolve(strix, F16_MODEL, 4)[0].source == "catalog"
    assert ceilings.resolve(strix, F16_MODEL, 4, name="probe")[0].source == "probe"


def test_an_uncatalogued_gpu_gets_no_ceilings_and_says_why():
    unknown = {"id": "y", "kind": "gpu", "name": "NVIDIA GeForce RTX 5080", "catalog": None}
    figures, basis = ceilings.resolve(unknown, F16_MODEL, 8)
    assert figures is None and basis["source"] == "none" and "--hardware" in basis["reason"]
