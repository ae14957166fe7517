"""Apple GPUs' FLOP/s in the hardware catalog: Apple prints a TFLOPS figure for the
M1 alone, so every Apple chip's fp32 and fp16 are GPU cores x 128 FP32 ALUs x 2 (an
FMA) x the GPU clock, each factor naming its source, and an M2 Max now has a
prefill ceiling."""

import json
import re

import pytest

from conftest import run_pdx
from pdx.domain.hardware import catalog

APPLE = [chip for chip in catalog.chips() if chip.vendor == "Apple"]
# Apple's GPU core count per entry: the largest bin of a chip (a ceiling must bound
# the smaller bins), or the bin itself where the entry is one.
GPU_CORES = {
    "apple-m1": 8, "apple-m1-pro": 16, "apple-m1-max": 32, "apple-m1-ultra": 64,
    "apple-m2": 10, "apple-m2-pro": 19, "apple-m2-max": 38, "apple-m2-ultra": 76,
    "apple-m3": 10, "apple-m3-pro": 18, "apple-m3-max-14c": 30, "apple-m3-max": 40, "apple-m3-ultra": 80,
    "apple-m4": 10, "apple-m4-pro": 20, "apple-m4-max-14c": 32, "apple-m4-max": 40,
    "apple-m5": 10,
}
# Chips whose fp16 is not their ALUs' rate: the M5's GPU has Neural Accelerators, whose rate Apple gives only
# against the M4's ("over 4x the peak GPU compute for AI").
NEURAL = {"apple-m5": 4}


def alu_types(chip) -> tuple[str, ...]:
    return ("fp32",) if chip.id in NEURAL else ("fp32", "fp16")
ARITHMETIC = re.compile(r"(\d+) GPU cores x (\d+) ALUs x (\d+) FLOP/FMA x ([\d.]+) GHz = ([\d.]+) TFLOP/s")


def computed_tflops(derivation: dict) -> float:
    d = derivation
    return d["gpu_cores"] * d["alus_per_core"] * d["flop_per_alu_clock"] * d["clock_ghz"] / 1e3


def test_every_apple_entry_is_covered():
    assert {chip.id for chip in APPLE} == set(GPU_CORES)


@pytest.mark.parametrize("chip", APPLE, ids=lambda c: c.id)
def test_fp32_and_fp16_each_name_a_source_url_for_every_factor(chip):
    sources = catalog.sources()
    for dtype in alu_types(chip):
        figure = chip.tflops[dtype]
        assert figure.value > 0 and not figure.sparse and figure.note, (chip.id, dtype)
        assert catalog.source_url(figure.source).startswith("https://"), (chip.id, dtype)
        factors = figure.derivation["sources"]
        assert set(factors) == {"gpu_cores", "alus_per_core", "clock_ghz"}, (chip.id, dtype)
        for key in factors.values():
            assert sources[key]["url"].startswith("https://") and sources[key]["title"], (chip.id, key)


@pytest.mark.parametrize("chip", APPLE, ids=lambda c: c.id)
def test_each_figure_is_cores_x_128_alus_x_2_x_clock(chip):
    for dtype in alu_types(chip):
        figure = chip.tflops[dtype]
        d = figure.derivation
        assert (d["gpu_cores"], d["alus_per_core"], d["flop_per_alu_clock"]) == (GPU_CORES[chip.id], 128, 2)
        assert 1.2 <= d["clock_ghz"] <= 1.7, chip.id  # every Apple GPU clock so far: 1.278 to 1.578 GHz
        assert figure.value == pytest.approx(computed_tflops(d), rel=0.05), (chip.id, dtype)
        # The note spells out the same arithmetic the derivation holds.
        cores, alus, fma, ghz, total = ARITHMETIC.search(figure.note).groups()
        assert (int(cores), int(alus), int(fma), float(ghz)) == (d["gpu_cores"], 128, 2, d["clock_ghz"])
        assert float(total) == pytest.approx(computed_tflops(d), abs=0.006)


@pytest.mark.parametrize("chip", APPLE, ids=lambda c: c.id)
def test_fp16_runs_at_the_fp32_rate_and_serves_fp16_engines(chip):
    if chip.id in NEURAL:  # the accelerators' claimed rate, said as Apple says it, with its source
        assert chip.tflops["fp16"].value == pytest.approx(NEURAL[chip.id] * chip.tflops["fp32"].value)
        assert "Neural Accelerators" in chip.tflops["fp16"].note and chip.tflops["fp16"].source == chip.id
        return
    assert chip.tflops["fp16"].value == chip.tflops["fp32"].value
    assert "fp32 rate" in chip.tflops["fp16"].note
    assert chip.flops_for("fp16") == ("fp16", pytest.approx(chip.tflops["fp32"].value * 1e12))
    assert chip.flops_for("bf16")[0] == "fp16"


def test_apple_s_own_m1_figure_is_kept_and_the_rest_are_computed():
    m1 = catalog.lookup("m1").tflops["fp32"]
    assert m1.value == 2.6 and m1.source == "apple-m1" and "Apple's own figure" in m1.note
    for chip in APPLE:
        if chip.id != "apple-m1":
            assert "computed" in chip.tflops["fp32"].note, chip.id


@pytest.mark.parametrize("bin_id, "
                         "full_id", [("apple-m3-max-14c", "apple-m3-max"), ("apple-m4-max-14c", "apple-m4-max")])
def test_a_smaller_gpu_bin_has_the_lower_ceiling(bin_id, full_id):
    assert catalog.get(bin_id).dense_flops("fp16") < catalog.get(full_id).dense_flops("fp16")


def test_a_run_record_carries_the_derivation_only_where_there_is_one():
    apple = catalog.lookup("m2 max").figures()["tflops"]["fp16"]
    assert apple["derivation"]["gpu_cores"] == 38 and apple["url"].startswith("https://www.apple.com/")
    assert "derivation" not in catalog.lookup("h100").figures()["tflops"]["fp16"]


def test_pdx_ceiling_gives_an_m2_max_a_prefill_ceiling():
    args = ("ceiling", "--hardware", "m2 max", "--params", "7B", "--model-bytes", "3.8GB")
    result = run_pdx(*args)
    assert result.returncode == 0, result.stderr
    assert "13.6 TFLOP/s fp16" in result.stdout
    prefill = next(line for line in result.stdout.splitlines() if line.strip().startswith("prefill"))
    assert "t/s ceiling" in prefill and "no ceiling" not in prefill
    result = run_pdx(*args, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["hardware"]["flops"] == pytest.approx(13.6e12) and report["hardware"]["flops_dtype"] == "fp16"
    # 2 FLOPs per parameter per prompt token: 13.6e12 / 14e9 = 971 t/s.
    assert report["prefill"]["bound"] == "compute"
    assert report["prefill"]["ceiling"] == pytest.approx(13.6e12 / (2 * 7e9), rel=1e-3)
