"""The bandwidth and matmul probes (small arrays here; the spread of the
full-size probes is printed by tests/benchmarks/probe_spread.py), their
cache, and how a run picks catalog or probe figures."""

import json
import math

import pytest

from pdx.measure import ceiling_sources as sources
from pdx.measure.hardware import probe

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
        # Positive finite rates (how high is the machine's business: busy cores gave half of a quiet run's).
        assert 0 < bw[kernel] < math.inf and len(bw["samples"][kernel]) == 2
    assert bw["best"] == max(bw["copy"], bw["triad"], bw["read"]) and bw["best_kernel"] in ("copy", "triad", "read")
    assert bw["array_bytes"] == 4 * 2**20
    assert 0 < mm["flops"] < math.inf and mm["n"] == 128 and mm["dtype"] == "float32" and mm["blas"]
    assert "read + written" in result["method"]["bandwidth"] and "float32 GEMM" in result["method"]["matmul"]


def test_results_are_cached_per_machine_and_threads_until_forced(monkeypatch):
    monkeypatch.setattr(probe, "_load", lambda: 0.0)  # a quiet machine: a forced probe always replaces
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
    figures, basis = sources.resolve({"id": "cpu-box", "kind": "cpu", "catalog": None}, F16_MODEL, 2)
    assert figures.source == basis["source"] == "probe" and basis["probe"]["threads"] == 2
    assert figures.bandwidth == basis["probe"]["bandwidth"]["best"] and figures.flops_dtype == "f32 sgemm"


def test_a_gpu_run_uses_its_catalog_entry_and_a_name_overrides_detection():
    h100 = {"id": "x", "kind": "gpu", "name": "NVIDIA H100 80GB HBM3", "catalog": "nvidia-h100-sxm"}
    figures, basis = sources.resolve(h100, F16_MODEL, 8)
    assert (figures.source, figures.ref, figures.flops_dtype) == ("catalog", "nvidia-h100-sxm", "fp16")
    assert basis["chip"]["bandwidth_gbs"]["url"].startswith("https://")
    figures, _ = sources.resolve(h100, F16_MODEL | {"dtype": "Q4_0"}, 8, name="rtx 4090")
    assert (figures.ref, figures.flops_dtype, figures.bandwidth) == ("nvidia-rtx-4090", "int8", 1008e9)


def test_probe_as_a_name_judges_an_accelerator_machine_by_its_cpu():
    probe.measure("soc-box", 4, **SMALL)
    strix = {"id": "soc-box", "kind": "soc", "name": "AMD RYZEN AI MAX+ 395", "catalog": "amd-ryzen-ai-max-395"}
    assert sources.resolve(strix, F16_MODEL, 4)[0].source == "catalog"
    assert sources.resolve(strix, F16_MODEL, 4, name="probe")[0].source == "probe"


def test_an_uncatalogued_gpu_gets_no_ceilings_and_says_why():
    unknown = {"id": "y", "kind": "gpu", "name": "NVIDIA GeForce RTX 5080", "catalog": None}
    figures, basis = sources.resolve(unknown, F16_MODEL, 8)
    assert figures is None and basis["source"] == "none" and "--hardware" in basis["reason"]


def _measured(bandwidth: float, flops: float):
    """A stand-in for the probes' child processes, with these figures."""
    def child(kind, threads, size, reps):
        if kind == "bandwidth":
            rates = {"copy": bandwidth * 0.9, "triad": bandwidth * 0.95, "read": bandwidth}
            return {"threads": threads, "array_bytes": size, "repetitions": reps, **rates,
                    "samples": {k: [v] for k, v in rates.items()}, "best": bandwidth, "best_kernel": "read"}
        return {"dtype": "float32", "n": size, "repetitions": reps, "flops": flops, "samples": [flops],
                "blas": "openblas", "numpy": "2"}
    return child


def _forced(monkeypatch, load: float, bandwidth: float, flops: float) -> dict:
    monkeypatch.setattr(probe, "_load", lambda: load)
    monkeypatch.setattr(probe, "_child", _measured(bandwidth, flops))
    return probe.measure("box", 4, force=True)


def test_a_forced_probe_on_a_busy_machine_does_not_replace_a_better_cached_one(monkeypatch):
    """`pdx hw probe --force` under a load of 7: the new figures, a third lower, are said and set
    aside; the good cached probe stays in use (and in the cache, for every later run)."""
    good = _forced(monkeypatch, 0.1, 30e9, 600e9)
    assert good["cached"] is False
    busy = _forced(monkeypatch, 7.0, 20e9, 400e9)
    assert busy["cached"] is True and busy["measured_at"] == good["measured_at"]
    assert busy["bandwidth"]["best"] == 30e9 and busy["matmul"]["f32"]["flops"] == 600e9
    kept = busy["kept_over"]
    assert kept["load_average"]["before"] == 7.0 and kept["figures"] == {"bandwidth": 20e9, "matmul f32": 400e9}
    assert "load average 7" in kept["note"] and "kept the cached probe" in kept["note"]
    assert probe.cached("box", 4)["bandwidth"]["best"] == 30e9
    # One figure lower is enough to keep the cached probe: a busy machine lowers what it measures.
    assert _forced(monkeypatch, 7.0, 40e9, 500e9)["bandwidth"]["best"] == 30e9


def test_a_forced_probe_replaces_the_cached_one_when_quiet_or_no_worse(monkeypatch):
    _forced(monkeypatch, 0.1, 30e9, 600e9)
    higher = _forced(monkeypatch, 7.0, 31e9, 650e9)  # busy, yet higher everywhere: the better figures
    assert higher["cached"] is False and "kept_over" not in higher
    assert probe.cached("box", 4)["bandwidth"]["best"] == 31e9
    quiet = _forced(monkeypatch, 0.2, 20e9, 400e9)  # quiet: what the machine gives now, even if less
    assert quiet["cached"] is False and probe.cached("box", 4)["bandwidth"]["best"] == 20e9


def test_hw_probe_force_says_when_it_kept_the_cached_probe(monkeypatch):
    from conftest import run_pdx_here

    from pdx.domain import hardware

    machine, threads = hardware.detect()["id"], hardware.default_threads()
    monkeypatch.setattr(probe, "_child", _measured(30e9, 600e9))
    monkeypatch.setattr(probe, "_load", lambda: 0.1)
    probe.measure(machine, threads)
    monkeypatch.setattr(probe, "_child", _measured(20e9, 400e9))
    monkeypatch.setattr(probe, "_load", lambda: 7.0)
    result = run_pdx_here("hw", "probe", "--force")
    assert result.returncode == 0, result.stderr
    assert "600 GFLOP/s" in result.stdout and "400 GFLOP/s" not in result.stdout
    (line,) = result.stderr.splitlines()
    assert line.startswith("pdx: measured again under load (load average 7 as it started)")
    assert "kept the cached probe" in line
    assert f"load average {probe.BUSY_LOAD:g} or more" in run_pdx_here("hw", "probe", "--help").stdout

