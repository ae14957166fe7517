"""The roofline arithmetic: bounds per phase, batch sharing, the binding
ceiling, fractions and the above-ceiling flag."""

import pytest

from pdx.domain import ceilings

from pdx.domain.models import kvcache
from pdx.domain.ceilings.roofline import HardwareFigures, ModelFigures, knee_batch, phase, ridge_point

HW = HardwareFigures(bandwidth=400e9, flops=27e12, flops_dtype="fp16", source="given", ref="test", label="test")
LLAMA2_7B_Q4 = ModelFigures(name="llama-2-7b q4_0", file_bytes=3.83e9, params=7e9)


def test_napkin_decode_is_bandwidth_over_file_size():
    decode = phase(LLAMA2_7B_Q4, HW, "decode", 1)
    assert decode.memory_bound == pytest.approx(104.44, abs=0.01)
    assert decode.compute_bound == pytest.approx(27e12 / 14e9)
    assert (decode.ceiling, decode.bound) == (decode.memory_bound, "memory")


def test_the_weight_read_is_shared_by_a_batch_and_kv_is_not():
    dims = kvcache.make_dims("test", 32, 32, 128, n_heads=32)
    model = ModelFigures(name="m", file_bytes=3.83e9, params=7e9, kv=dims)
    one, eight = phase(model, HW, "decode", 1, depth=1000), phase(model, HW, "decode", 1, depth=1000, batch=8)
    kv = dims.bytes_per_token() * (1000 + 1)
    assert one.bytes_per_token == pytest.approx(3.83e9 + kv)
    assert eight.bytes_per_token == pytest.approx(3.83e9 / 8 + kv)
    assert eight.compute_bound == pytest.approx(one.compute_bound)  # FLOPs per token do not shrink


def test_prefill_reads_weights_once_per_ubatch_and_is_compute_bound():
    pp = phase(LLAMA2_7B_Q4, HW, "prefill", 512, ubatch=512)
    assert pp.bytes_per_token == pytest.approx(3.83e9 / 512)
    assert pp.bound == "compute" and pp.ceiling == pytest.approx(27e12 / 14e9)
    assert phase(LLAMA2_7B_Q4, HW, "prefill", 1024, ubatch=256).bytes_per_token == pytest.approx(3.83e9 / 256)


def test_attention_flops_and_the_embedding_table():
    dims = kvcache.make_dims("test", 2, 1, 64, n_heads=4)
    model = ModelFigures(name="m", file_bytes=1e6, params=1e6, embedding_params=2e5, embedding_bytes_unread=4e5,
                         output_params=2e5, kv=dims)
    assert model.step_bytes == 6e5
    assert model.flops_per_token("decode", 10) == 2 * 8e5 + 4 * 2 * 4 * 64 * 10
    # A 100-token prefill computes logits for its last token only.
    assert model.flops_per_token("prefill", 0, 100) == pytest.approx(2 * (8e5 - 2e5 * 0.99))


def test_ridge_point_and_knee_batch():
    assert ridge_point(HW) == pytest.approx(67.5)
    f16 = ModelFigures(name="f16", file_bytes=14e9, params=7e9)  # two bytes per parameter
    assert knee_batch(f16, HW) == pytest.approx(ridge_point(HW))  # DESIGN.md: the knee is the ridge for FP16
    big_kv = ModelFigures(name="kv", file_bytes=14e9, params=7e9, kv=kvcache.make_dims("t", 80, 64, 128))
    assert knee_batch(big_kv, HW, context=100_000) is None  # the caches keep decode memory-bound


def _test(kind, n_prompt, n_gen, rate, **extra):
    return {"kind": kind, "n_prompt": n_prompt, "n_gen": n_gen, "depth": 0, "batch": 1}, {"rate": {"mean": rate},
                                                                                          **extra}


def test_stored_ceilings_name_the_bound_and_the_fraction():
    record = ceilings.test_ceilings(*_test("tg", 0, 1, 61.19), LLAMA2_7B_Q4, HW)
    assert record["bound"] == "memory" and record["fraction"] == pytest.approx(0.5859, abs=1e-4)
    assert record["above_ceiling"] is False and record["bandwidth"] == 400e9 and record["source"] == "given"


def test_a_rate_above_its_ceiling_is_flagged_not_reported():
    record = ceilings.test_ceilings(*_test("tg", 0, 1, 150.0), LLAMA2_7B_Q4, HW)
    assert record["above_ceiling"] is True and "measurement error" in record["warning"]


def test_pp_plus_tg_blends_the_two_phases_and_judges_each():
    test, stats = _test("pg", 512, 128, 100.0, prompt_rate={"mean": 1000.0}, gen_rate={"mean": 50.0})
    record = ceilings.test_ceilings(test, stats, LLAMA2_7B_Q4, HW)
    pp, tg = record["phases"]["prefill"], record["phases"]["decode"]
    assert record["ceiling"] == pytest.approx(640 / (512 / pp["ceiling"] + 128 / tg["ceiling"]))
    assert record["bound"] == "memory"  # decode takes longer at its ceiling
    assert pp["fraction"] == pytest.approx(1000 / pp["ceiling"]) and tg["fraction"] == pytest.approx(50 / tg["ceiling"])


def test_without_flops_only_the_memory_bound_is_known():
    hw = HardwareFigures(bandwidth=400e9, flops=None, flops_dtype=None, source="given", ref="t", label="t")
    decode = phase(LLAMA2_7B_Q4, hw, "decode", 1)
    assert decode.compute_bound is None and decode.ceiling == decode.memory_bound
    assert decode.bound is None  # which binds cannot be said with one bound unknown


@pytest.mark.parametrize("dtype, expected", [("F16", "fp16"), ("F32", "fp32"), ("BF16", "bf16"), ("Q4_0", "int8"),
                                             ("Q8_0", "int8"), ("float16", "fp16"), ("bfloat16", "bf16")])
def test_compute_dtype(dtype, expected):
    assert ceilings.compute_dtype(dtype) == expected
