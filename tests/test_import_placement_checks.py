"""Where an imported model lives, checked: a dense model bigger than the device's memory is placed (the
excess read from host memory), a MoE says it cannot tell; llama.cpp's device list counts the GPUs a log
names; -nkvo leaves KV reads off the device; an RPC build says what its ceiling assumes."""

from __future__ import annotations

import pytest

from pdx.domain.ceilings import placement
from pdx.domain.ceilings.roofline import HardwareFigures, ModelFigures
from pdx.domain.hardware import named

CARD = HardwareFigures(bandwidth=672e9, flops=200e12, flops_dtype="int8", source="catalog", ref="x", label="12 GB card",
                       memory_bytes=12 * 2**30, method="peak")
FULL = placement.Placement(gpu_layers=99, n_layers=40)


def test_a_dense_model_too_big_for_the_card_reads_the_excess_from_host_memory():
    model = ModelFigures(name="m", file_bytes=13.7 * 2**30, params=14e9)
    share = (13.7 - 12) / 13.7
    placed, note = placement.spilled(CARD, model, FULL, 64e9, unified=False)
    assert placed.bandwidth == pytest.approx(1 / ((1 - share) / 672e9 + share / 64e9))
    assert "13.7 GiB exceed the device memory's 12.0 GiB" in note and "12% of the weights" in note
    unknown, said = placement.spilled(CARD, model, FULL, None, unified=False)
    assert unknown.bandwidth == pytest.approx(672e9 / (1 - share)) and "give --host-bandwidth" in said


def test_a_moe_too_big_for_the_card_says_which_weights_spill_is_unknown():
    moe = ModelFigures(name="m", file_bytes=13.7 * 2**30, params=30e9, expert_bytes=12 * 2**30, expert_params=28e9,
                       n_experts=128, experts_used=8)
    placed, note = placement.spilled(CARD, moe, FULL, 64e9, unified=False)
    assert placed is CARD and "only the device is counted" in note


def test_a_model_that_fits_or_a_unified_memory_or_a_partial_offload_is_left_alone():
    small = ModelFigures(name="m", file_bytes=4 * 2**30, params=7e9)
    big = ModelFigures(name="m", file_bytes=40 * 2**30, params=70e9)
    assert placement.spilled(CARD, small, FULL, None, unified=False) == (CARD, None)
    assert placement.spilled(CARD, big, FULL, None, unified=True) == (CARD, None)
    assert placement.spilled(CARD, big, placement.Placement(gpu_layers=20, n_layers=80), None, False) == (CARD, None)


def test_llamas_device_list_counts_the_gpus_once_however_often_a_log_repeats_it():
    log = "\n".join(["ggml_cuda_init: found 8 CUDA devices:",
                     *(f"  Device {i}: NVIDIA A100-SXM4-80GB, compute capability 8.0, VMM: yes" for i in range(8))] * 2)
    assert [(c.id, n) for c, n in named.chips_in(log)] == [("nvidia-a100-80gb-sxm", 8)]


MAC_8GB = HardwareFigures(bandwidth=66.7e9, flops=2.6e12, flops_dtype="fp16", source="catalog", ref="apple-m1",
                          label="Apple M1, 8 GB", memory_bytes=8 * 2**30, method="peak")


@pytest.mark.parametrize("memory_gib, usable_mib", [(8, 5461.33), (16, 10922.67), (32, 21845.33), (64, 49152),
                                                    (96, 73728)])
def test_metals_working_set_is_the_one_macos_reports(memory_gib, usable_mib):
    """The recommendedMaxWorkingSetSize that llama.cpp's ggml_metal_init printed on real Macs of each size
    (llama.cpp issues #2011, #1870, #3213; ollama #434), replayed from those logs."""
    assert placement.metal_working_set(memory_gib * 2**30) / 2**20 == pytest.approx(usable_mib, abs=0.01)


def test_a_test_whose_model_and_cache_exceed_metals_working_set_cannot_have_run():
    from pdx.domain.models.kvcache import KVDims

    llama8b = ModelFigures(name="m", file_bytes=4.58 * 2**30, params=8.03e9,
                           kv=KVDims(n_layers=32, n_kv_heads=8, head_dim=128, source="Llama 3 8B"))
    at = {n: {"n_prompt": n, "n_gen": 0, "depth": 0, "batch": 1} for n in (4096, 8192)}
    assert placement.unfit(llama8b, MAC_8GB, "Apple", at[4096]) is None  # 4.58 + 0.50 GiB in 5.33
    why = placement.unfit(llama8b, MAC_8GB, "Apple", at[8192])
    assert why.startswith("cannot fit") and "KV cache at 8192 tokens (1.00 GiB)" in why and "5.33 GiB" in why
    assert placement.unfit(llama8b, CARD, "NVIDIA", at[8192] | {"n_prompt": 100_000}) is None  # a card spills


def test_a_mac_named_with_its_memory_is_that_configuration():
    from pdx.contract.errors import PdxError
    from pdx.domain.ceilings.imported import Given

    assert Given.parse("M1 8GB").memory == 8 * 2**30 and Given.parse("Apple M1 (8 GB)").hardware == "Apple M1"
    assert Given.parse("RTX 3060 12GB").memory is None  # a GPU sold per memory size is its own chip
    with pytest.raises(PdxError, match="comes with at most 16 GB"):
        Given.parse("M1 64GB")
