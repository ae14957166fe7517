"""Ceilings that can bind their phase, judged against every figure there is,
and mixture-of-experts bytes and FLOPs: the roofline arithmetic, the stored
record, and the issue's acceptance commands through the real command line."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdx.domain import ceilings
from pdx.measure import ceiling_sources as sources
from pdx.domain.ceilings.roofline import HardwareFigures, ModelFigures, knee_batch, phase

from conftest import assert_one_line_error, run_pdx

HW = HardwareFigures(bandwidth=400e9, flops=27e12, flops_dtype="fp16", source="catalog", ref="chip", label="chip")
NO_FLOPS = HardwareFigures(bandwidth=400e9, flops=None, flops_dtype=None, source="catalog", ref="m1", label="m1")
NO_BANDWIDTH = HardwareFigures(bandwidth=None, flops=27e12, flops_dtype="fp16", source="given", ref="x", label="x")
DENSE = ModelFigures(name="llama-2-7b q4_0", file_bytes=3.83e9, params=7e9)
# gpt-oss-120b's napkin: 63 GB, 117B parameters; 128 experts per layer, 4 per token.
EXPERTS = 60e9
MOE = ModelFigures(name="moe", file_bytes=63e9, params=117e9, expert_bytes=EXPERTS, expert_params=112e9,
                   n_experts=128, experts_used=4)


def pdx_ok(*args) -> str:
    result = run_pdx(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_memory_bound_is_no_prefill_ceiling():
    pre = phase(DENSE, NO_FLOPS, "prefill", 512, ubatch=512)
    assert pre.memory_bound and pre.ceiling is None and pre.bound is None
    assert "--flops" in pre.missing
    dec = phase(DENSE, NO_FLOPS, "decode", 1)
    assert dec.ceiling == dec.memory_bound and dec.bound is None  # decode's own bound caps it


def test_a_compute_bound_is_no_decode_ceiling():
    dec = phase(DENSE, NO_BANDWIDTH, "decode", 1)
    assert dec.compute_bound and dec.ceiling is None and "--bandwidth" in dec.missing
    assert phase(DENSE, NO_BANDWIDTH, "prefill", 512).ceiling == pytest.approx(27e12 / 14e9)


def test_without_a_parameter_count_decode_keeps_its_memory_bound():
    model = ModelFigures(name="given", file_bytes=3.83e9, params=None)
    dec = phase(model, HW, "decode", 1)
    assert dec.ceiling == pytest.approx(104.44, abs=0.01) and dec.compute_bound is None
    assert "--params" in dec.missing and phase(model, HW, "prefill", 512).ceiling is None


def test_a_stored_record_without_a_ceiling_says_what_is_missing():
    test = {"n_prompt": 512, "n_gen": 0, "depth": 0, "batch": 1}
    record = ceilings.test_ceilings(test, {"rate": {"mean": 300.0}}, DENSE, NO_FLOPS)
    assert record["ceiling"] is None and record["fraction"] is None and "FLOP/s" in record["missing"]


def test_moe_decode_reads_non_expert_weights_and_the_routed_share():
    dec = phase(MOE, HW, "decode", 1)
    assert dec.bytes_per_token == pytest.approx(3e9 + EXPERTS * 4 / 128)
    assert dec.experts_per_layer == pytest.approx(4)
    assert MOE.active_params == pytest.approx(117e9 - 112e9 * (1 - 4 / 128))
    assert dec.flops_per_token == pytest.approx(2 * MOE.active_params)


@pytest.mark.parametrize("batch", [1, 2, 8, 64, 512])
def test_a_batch_reads_the_expected_distinct_experts(batch):
    dec = phase(MOE, HW, "decode", 1, batch=batch)
    coverage = 1 - (1 - 4 / 128) ** batch
    assert dec.experts_per_layer == pytest.approx(128 * coverage)
    assert dec.bytes_per_token * batch == pytest.approx(3e9 + EXPERTS * coverage)


def test_moe_memory_bound_falls_more_slowly_with_batch_than_a_dense_model_s():
    dense = ModelFigures(name="dense", file_bytes=63e9 * 4.43 / 63, params=5e9)  # the same bytes at batch 1
    moe_gain = phase(MOE, HW, "decode", 1, batch=8).memory_bound / phase(MOE, HW, "decode", 1).memory_bound
    dense_gain = phase(dense, HW, "decode", 1, batch=8).memory_bound / phase(dense, HW, "decode", 1).memory_bound
    assert dense_gain == pytest.approx(8) and 1 < moe_gain < dense_gain


def test_a_prefill_chunk_reads_its_experts_once_per_step():
    pre = phase(MOE, HW, "prefill", 512, ubatch=512)
    assert pre.experts_per_layer == pytest.approx(128 * (1 - (1 - 4 / 128) ** 512))
    assert pre.bytes_per_token * 512 == pytest.approx(3e9 + EXPERTS * (1 - (1 - 4 / 128) ** 512))


def test_the_moe_knee_accounts_for_expert_coverage():
    knee = knee_batch(MOE, HW)
    assert knee is not None and knee > 1
    step = phase(MOE, HW, "decode", 1, batch=round(knee))
    assert step.memory_bound == pytest.approx(step.compute_bound, rel=0.01)  # the bounds meet at the knee
    # Dense models keep the closed form (and their old answers).
    assert knee_batch(ModelFigures(name="f16", file_bytes=14e9, params=7e9), HW) == pytest.approx(67.5)


@given(e=st.integers(1, 256), k=st.integers(1, 256), tokens=st.floats(1, 1e6))
def test_expert_coverage_is_a_share_that_grows_with_tokens(e, k, tokens):
    k = min(k, e)
    model = ModelFigures(name="m", file_bytes=1e9, params=1e9, expert_bytes=5e8, expert_params=5e8,
                         n_experts=e, experts_used=k)
    cover = model.expert_coverage(tokens)
    assert k / e - 1e-12 <= cover <= 1.0
    assert model.expert_coverage(tokens * 2) >= cover - 1e-12
    assert 5e8 <= model.weight_bytes(tokens) <= 1e9 + 1e-3


def test_the_routing_assumption_is_stored_with_every_moe_ceiling():
    record = ceilings.test_ceilings({"n_prompt": 0, "n_gen": 32, "depth": 0, "batch": 4},
                                    {"rate": {"mean": 50.0}}, MOE, HW)
    assert "uniform routing" in record["routing"] and "4 of 128" in record["routing"]
    assert record["phases"]["decode"]["experts_per_layer"] == pytest.approx(128 * (1 - (1 - 4 / 128) ** 4))
    assert "routing" not in ceilings.test_ceilings({"n_prompt": 0, "n_gen": 32, "depth": 0, "batch": 1},
                                                   None, DENSE, HW)
    assert "routing" in ceilings.predictions(MOE, HW) and "knee_experts_per_layer" in ceilings.predictions(MOE, HW)


def test_a_model_identity_s_experts_reach_the_roofline():
    model = {"name": "m", "file_bytes": 1e9, "n_params": 1e9, "n_layers": 2, "n_kv_heads": 2, "head_dim": 32,
             "extra": {"experts": {"count": 8, "used": 2, "expert_bytes": 6e8, "expert_params": 6e8}}}
    figures = ceilings.model_figures(model)
    assert figures.is_moe and figures.step_bytes == pytest.approx(4e8 + 6e8 * 2 / 8)


def test_two_sources_the_lower_ceiling_binds_and_both_are_kept():
    probe = HardwareFigures(bandwidth=250e9, flops=5e12, flops_dtype="f32 sgemm", source="probe", ref="p", label="p")
    test = {"n_prompt": 0, "n_gen": 16, "depth": 0, "batch": 1}
    record = ceilings.judged(test, {"rate": {"mean": 70.0}}, DENSE, [HW, probe])
    assert record["source"] == "probe" and set(record["sources"]) == {"catalog", "probe"}
    assert record["ceiling"] == pytest.approx(250e9 / 3.83e9) and record["above_ceiling"] is True
    assert "measurement error" in record["warning"]  # above the probed ceiling, though below the vendor's
    assert record["sources"]["catalog"]["above_ceiling"] is False
    assert ceilings.judged(test, None, DENSE, [HW]) == ceilings.test_ceilings(test, None, DENSE, HW)


def test_a_catalog_chip_run_is_also_judged_by_the_cached_cpu_probe(monkeypatch):
    from pdx.measure.hardware import probe

    cached = {"threads": 2, "bandwidth": {"best": 3e10, "best_kernel": "copy"}, "matmul": {"f32": {"flops": 2e11}}}
    monkeypatch.setattr(probe, "cached", lambda machine, threads: cached if machine == "box" else None)
    model = {"dtype": "F16"}
    figures, basis = sources.resolve_sources({"id": "box", "kind": "cpu"}, model, 2, name="rtx 4090", device="cpu")
    assert [f.source for f in figures] == ["catalog", "probe"] and basis["probe_figures"]["bandwidth"] == 3e10
    alone, _ = sources.resolve_sources({"id": "other", "kind": "cpu"}, model, 2, name="rtx 4090", device="cpu")
    assert [f.source for f in alone] == ["catalog"]  # no probe cached: the vendor's figures alone


# The issues' acceptance commands.

def test_a_bandwidth_alone_offers_no_memory_bound_as_its_prefill_ceiling():
    # (issue 12 named the M1 Max, which had no FLOP/s then; every Apple chip has them now)
    given = ("ceiling", "--bandwidth", "400GB/s", "--model-bytes", "3.83GB", "--params", "7B")
    out = pdx_ok(*given)
    prefill = next(line for line in out.splitlines() if line.strip().startswith("prefill"))
    assert "no ceiling" in prefill and "cannot bind prefill" in prefill and "--flops" in prefill
    report = json.loads(pdx_ok(*given, "--json"))
    assert report["prefill"]["ceiling"] is None and report["prefill"]["memory_bound"] > 0


def test_the_napkin_form_without_params_gives_the_decode_memory_bound():
    out = pdx_ok("ceiling", "--bandwidth", "400GB/s", "--model-bytes", "3.83GB", "--measured", "61.19")
    assert "104.4 t/s ceiling" in out and "61.19 t/s decode = 59% of its ceiling" in out
    assert "compute bound needs" in out and "--params" in out


@pytest.mark.parametrize("model", [["--shape", "gpt-oss-120b", "--type", "mxfp4"],
                                   ["--model-bytes", "63GB", "--params", "117B", "--active-params", "5.1B"]])
def test_gpt_oss_120b_on_dgx_spark_lands_below_its_ceiling(model):
    args = ("ceiling", "--hardware", "DGX Spark", *model, "--measured", "60.57")
    report = json.loads(pdx_ok(*args, "--json"))
    assert 0.4 < report["decode"]["fraction"] < 0.8 and report["decode"]["above_ceiling"] is False
    assert report["model"]["routing"]
    out = pdx_ok(*args)
    assert "assumed:" in out and "ABOVE" not in out and "active" in out


def test_experts_and_experts_used_give_the_coverage_of_a_batch():
    base = ("ceiling", "--hardware", "DGX Spark", "--model-bytes", "63GB", "--params", "117B",
            "--active-params", "5.1B", "--json")
    one = json.loads(pdx_ok(*base))
    routed = json.loads(pdx_ok(*base, "--experts", "128", "--experts-used", "4", "-b", "8"))
    assert routed["decode"]["experts_per_layer"] == pytest.approx(128 * (1 - (1 - 4 / 128) ** 8))
    assert "uniform routing" in routed["model"]["routing"]
    assert routed["model"]["active_params"] == pytest.approx(one["model"]["active_params"])
    unknown = json.loads(pdx_ok(*base, "-b", "8"))  # without E and k: no more bytes than one token reads
    assert unknown["decode"]["bytes_per_token"] * 8 == pytest.approx(one["decode"]["bytes_per_token"])


@pytest.mark.parametrize("args, needles", [
    (["--active-params", "5.1B"], ["--active-params needs --params"]),
    (["--params", "117B", "--active-params", "200B"], ["more than"]),
    (["--params", "117B", "--experts", "128"], ["--experts and --experts-used go together"]),
    (["--params", "117B", "--experts", "4", "--experts-used", "8", "--active-params", "5B"], ["more than --experts"]),
    (["--params", "117B", "--experts", "128", "--experts-used", "4"], ["give --active-params too"]),
    (["--params", "117B", "--active-params", "lots"], ["--active-params", "cannot read"]),
])
def test_bad_moe_options_are_one_line(args, needles):
    assert_one_line_error(run_pdx("ceiling", "--bandwidth", "273GB/s", "--model-bytes", "63GB", *args), *needles)


def test_a_shape_s_weight_type_is_costed_from_llama_cpp_s_block_table():
    from pdx.domain.ceilings.napkin import weight_bytes_per_param

    assert weight_bytes_per_param("q4_0") == 18 / 32 and weight_bytes_per_param("Q4_K") == 144 / 256
    assert weight_bytes_per_param("mxfp4") == 17 / 32 and weight_bytes_per_param("bf16") == 2
    assert_one_line_error(run_pdx("ceiling", "--bandwidth", "1TB/s", "--shape", "llama-3.1-8b", "--type", "q4_k_m"),
                          "--type q4_k_m", "llama-quantize")


def test_a_napkin_for_this_machine_s_chip_is_also_judged_by_its_probe(monkeypatch):
    # A Mac cannot exist here: detection is replaced by what an M1 Max reports, the probe cache by a result.
    from pdx.domain import hardware
    from pdx.domain.ceilings import napkin
    from pdx.measure.hardware import probe

    cached = {"threads": 8, "bandwidth": {"best": 2.5e11, "best_kernel": "copy"}, "matmul": {"f32": {"flops": 4e12}}}
    monkeypatch.setattr(hardware, "detect", lambda: {"id": "mac", "kind": "cpu", "catalog": "apple-m1-max"})
    monkeypatch.setattr(probe, "cached", lambda machine, threads: cached if machine == "mac" else None)
    found = sources.hardware_sources("M1 Max", None, None, "fp16", threads=8)
    assert [s.source for s in found] == ["catalog", "probe"]
    report = napkin.ceiling_report(found, DENSE, measured=61.19, measured_pp=300.0)
    assert report["decode"]["source"] == "probe" and report["decode"]["ceiling"] == pytest.approx(2.5e11 / 3.83e9)
    assert report["decode"]["above_ceiling"] is False and set(report["sources"]) == {"catalog", "probe"}
    # The M1 Max's GPU peak (10.62 TFLOP/s, cores x ALUs x clock) is far above the probe's 4: the probe binds prefill.
    assert report["prefill"]["source"] == "probe" and report["prefill"]["bound"] == "compute"
    assert report["sources"]["catalog"]["prefill"]["ceiling"] == pytest.approx(10.62e12 / (2 * 7e9), rel=1e-3)
    monkeypatch.setattr(hardware, "detect", lambda: {"id": "pc", "kind": "cpu", "catalog": None})
    assert [s.source for s in sources.hardware_sources("M1 Max", None, None, "fp16")] == ["catalog"]


def test_hardware_probe_judges_by_this_machine_s_probe(monkeypatch):
    from pdx.measure.hardware import probe

    result = {"threads": 2, "bandwidth": {"best": 4e10, "best_kernel": "copy"}, "matmul": {"f32": {"flops": 1e11}}}
    monkeypatch.setattr(probe, "measure", lambda machine, threads, force=False, **_: result)
    hw = sources.hardware_figures("probe", None, None, "fp16", threads=2)
    assert (hw.source, hw.bandwidth, hw.flops) == ("probe", 4e10, 1e11)
