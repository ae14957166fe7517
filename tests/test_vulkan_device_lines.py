"""ggml-vulkan's device lines, as real logs print them (tests/data/real/23, 28, 33, 56), say whether its
kernels multiply on matrix cores: where they say "none", a matrix unit's rate is no bound, and an imported
run is judged by the shader ALUs' (int8 dot products, else fp16, else fp32)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from pdx.domain.ceilings import kernels
from pdx.domain.hardware import catalog, named

REAL = Path(__file__).parent / "data" / "real"


def test_each_device_line_says_what_the_kernels_multiply_on():
    arc = named.vulkan_devices((REAL / "56_arc_a310_eco_on_pi500_vulkan_llama32_3b.md").read_text())
    assert arc == [{"name": "Intel(R) Arc(tm) A310 Graphics", "uma": False, "fp16": True, "int_dot": True,
                    "matrix_cores": "none"}]
    rx580 = named.vulkan_devices((REAL / "28_rx580_on_sifive_p550_vulkan_llama32_3b.md").read_text())
    assert rx580 == [{"name": "AMD Radeon RX 580 Series", "uma": False, "fp16": False, "matrix_cores": "none"}]
    quoted = named.vulkan_devices((REAL / "33_rtx5090_vulkan_coopmat2_llama31_8b_depth_sweep.md").read_text())
    assert quoted[0]["matrix_cores"] == "NV_coopmat2"  # a reply quoted with "> " still reads
    pi = named.vulkan_devices((REAL / "23_rx7900xt_on_pi5_vulkan_qwen25_14b.md").read_text())
    assert [d["name"] for d in pi] == ["AMD Radeon RX 7900 XT", "V3D 7.1.10.2"]


@pytest.mark.parametrize("device, dtype, used, times", [
    ({"matrix_cores": "none", "int_dot": True, "fp16": True}, "int8", "int8", 4),
    ({"matrix_cores": "none", "int_dot": False, "fp16": True}, "int8", "fp16", 2),
    ({"matrix_cores": "none", "fp16": False}, "int8", "fp32", 1),
    ({"matrix_cores": "none", "int_dot": True, "fp16": True}, "fp16", "fp16", 2),  # f16 weights: no dot products
])
def test_no_matrix_cores_bounds_by_the_shader_alus(device, dtype, used, times):
    chip = catalog.lookup("Arc A310")
    got, flops, why = kernels.vulkan_shader_bound(dtype, chip, device)
    assert (got, flops) == (used, chip.dense_flops("fp32") * times) and "matrix cores: none" in why


def test_matrix_cores_or_no_line_leave_the_matrix_rate():
    chip = catalog.lookup("RTX 5090")
    assert kernels.vulkan_shader_bound("int8", chip, {"matrix_cores": "NV_coopmat2"}) is None
    assert kernels.vulkan_shader_bound("int8", chip, None) is None


_FIELD = st.sampled_from(["uma", "fp16", "bf16", "warp size", "shared memory", "int dot", "matrix cores"])


@given(name=st.from_regex(r"[A-Za-z][A-Za-z0-9 ]{0,30}", fullmatch=True),
       fields=st.lists(st.tuples(_FIELD, st.sampled_from(["0", "1", "none", "KHR_coopmat", "65536"])), max_size=7),
       noise=st.text(max_size=200))
def test_any_log_reads_without_error_and_a_device_line_reads_back(name, fields, noise):
    line = f"ggml_vulkan: 0 = {name} (driver) | " + " | ".join(f"{k}: {v}" for k, v in fields)
    (device,) = named.vulkan_devices(noise.replace("ggml_vulkan", "") + "\n" + line)
    assert device["name"] == name.strip()
    last = {k: v for k, v in fields}  # a field printed twice: the first is kept by the line's reader, or the last
    if "matrix cores" in last:
        assert device["matrix_cores"] in {v for k, v in fields if k == "matrix cores"}
