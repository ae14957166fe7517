"""The hardware catalog: every number has a vendor source, the chips the
issue asks for are there, and names users type resolve."""

import pytest

from pdx.contract.errors import PdxError
from pdx.domain.hardware import catalog

REQUIRED = {
    "apple-m1", "apple-m1-pro", "apple-m1-max", "apple-m1-ultra", "apple-m2", "apple-m2-pro", "apple-m2-max",
    "apple-m2-ultra", "apple-m3", "apple-m3-pro", "apple-m3-max", "apple-m3-ultra", "apple-m4", "apple-m4-pro",
    "apple-m4-max", "nvidia-h100-sxm", "nvidia-h100-pcie", "nvidia-h200", "nvidia-a100-40gb", "nvidia-a100-80gb-sxm",
    "nvidia-l40s", "nvidia-rtx-3090", "nvidia-rtx-4090", "nvidia-rtx-5090", "nvidia-dgx-spark-gb10", "amd-mi300x",
    "amd-ryzen-ai-max-395",
}


def test_the_issue_s_chips_are_catalogued():
    assert REQUIRED <= {chip.id for chip in catalog.chips()}


def test_every_number_names_a_vendor_source():
    sources = catalog.sources()
    for key, source in sources.items():
        assert source["url"].startswith("https://") and source["title"], key
    for chip in catalog.chips():
        figures = [chip.memory_gb, chip.bandwidth_gbs, *chip.tflops.values()]
        assert chip.bandwidth_gbs is not None, chip.id
        for figure in figures:
            if figure is not None:
                # a figure the vendor does not publish comes from the GPU database, naming its page
                assert figure.value > 0 and (figure.source in sources or figure.url.startswith("https://")), \
                    (chip.id, figure)
                assert figure.url and figure.url.startswith("https://"), (chip.id, figure)


@pytest.mark.parametrize("name, chip_id", [
    ("m2 max", "apple-m2-max"), ("Apple M2 Max", "apple-m2-max"), ("H100 SXM5", "nvidia-h100-sxm"),
    ("h100", "nvidia-h100-sxm"), ("NVIDIA H100 80GB HBM3", "nvidia-h100-sxm"), ("H100 PCIe", "nvidia-h100-pcie"),
    ("NVIDIA GeForce RTX "
     "4090", "nvidia-rtx-4090"), ("rtx-5090", "nvidia-rtx-5090"), ("DGX Spark", "nvidia-dgx-spark-gb10"),
    ("MI300X", "amd-mi300x"), ("Strix Halo", "amd-ryzen-ai-max-395"), ("a100 40gb", "nvidia-a100-40gb"),
    ("A100-SXM4-80GB", "nvidia-a100-80gb-sxm"), ("m3 max", "apple-m3-max"), ("M3 Max 14-core", "apple-m3-max-14c"),
])
def test_names_users_type_resolve(name, chip_id):
    assert catalog.lookup(name).id == chip_id


def test_every_name_of_a_chip_leads_back_to_it():
    # Two chips claiming the same name would make one of them unreachable.
    for chip in catalog.chips():
        for name in (chip.id, chip.name, *chip.aliases):
            assert catalog.find(name) is chip, name


def test_unknown_hardware_is_a_one_line_error_with_suggestions():
    with pytest.raises(PdxError) as info:
        catalog.lookup("h1000")
    message = str(info.value)
    assert message.startswith("unknown hardware 'h1000'") and "h100" in message and "\n" not in message


def test_sparse_figures_are_halved_and_the_h100_ridge_point_is_about_295():
    h100 = catalog.lookup("h100 sxm")
    assert h100.dense_flops("fp16") == pytest.approx(989.5e12)
    assert h100.dense_flops("fp16") / h100.bandwidth == pytest.approx(295.4, abs=0.1)
    assert catalog.lookup("a100 40gb").dense_flops("fp16") == pytest.approx(312e12)  # printed dense
    assert catalog.lookup("dgx spark").dense_flops("fp4") == pytest.approx(500e12)


def test_a_missing_figure_falls_back_to_one_that_serves_the_type_or_none():
    m1 = catalog.lookup("m1")
    assert m1.flops_for("fp16") == ("fp16", pytest.approx(2.6e12)) and m1.flops_for("bf16")[0] == "fp16"
    assert catalog.lookup("mi300x").flops_for("fp4")[0] == "fp8"  # no fp4 figure: the next that serves it
    assert catalog.lookup("h100 sxm").flops_for("fp32")[0] == "fp32"
    assert catalog.lookup("rtx 4090").flops_for("int8")[0] == "int8"


def test_memory_capacity_is_binary_as_spec_sheets_mean_it():
    assert catalog.lookup("a100 80gb").memory_bytes == 80 * 2**30
