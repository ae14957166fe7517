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
