"""A synthetic mixture-of-experts model on real llama.cpp (tox -e llamacpp):
made in F16 by pdx, quantised by llama.cpp's own llama-quantize from pdx's
build, identified from its tensor table, and benchmarked on both llama.cpp
paths with ceilings whose memory bound reads the active experts only."""

import json

import pytest

from pdx.domain import ceilings
from pdx.domain.models import identify
from pdx.domain.synth import get_shape, write_gguf

from conftest import run_pdx

pytestmark = pytest.mark.llamacpp
TINY = get_shape("tiny-moe")


@pytest.fixture(scope="module")
def moe_gguf(tmp_path_factory):
    return write_gguf(TINY, "f16", tmp_path_factory.mktemp("moe") / "tiny-moe-f16.gguf")


def _quantize(source, dest, qtype):
    result = run_pdx("llamacpp", "quantize", str(source), str(dest), "--type", qtype)
    assert result.returncode == 0, result.stderr
    return dest


@pytest.mark.parametrize("qtype, block_type", [("Q4_K_M", "Q4_K"), ("MXFP4_MOE", "MXFP4")])
def test_llama_quantize_files_are_identified_from_their_tensor_table(moe_gguf, tmp_path, qtype, block_type):
    info = identify(_quantize(moe_gguf, tmp_path / f"{qtype}.gguf", qtype))
    assert info.dtype == qtype and block_type in info.extra["tensor_types"]
    experts = info.extra["experts"]
    assert (experts["count"], experts["used"]) == (TINY.n_experts, TINY.n_experts_used)
    assert experts["expert_params"] == TINY.expert_params
    # Bytes per weight read from the table: each type's bytes over its weights, as llama.cpp laid them out.
    for name, count in info.extra["tensor_types"].items():
        assert info.extra["tensor_type_bytes"][name] > 0 and count > 0
    assert experts["expert_bytes"] < TINY.expert_params * 2  # quantised below F16


def test_synth_of_a_k_quant_is_llama_quantize_of_pdx_s_f16(moe_gguf, tmp_path):
    """`pdx model synth --type q4_k_m` hands its f16 to llama.cpp's quantiser (a plugin's
    pdx_register_quantizers): the same bytes as quantising that f16 (named for the type it becomes, as
    llama-quantize keeps the name) by hand, and nothing left beside it."""
    made = tmp_path / "synth" / "q4km.gguf"
    result = run_pdx("model", "synth", "--shape", TINY.name, "--type", "q4_k_m", "-o", str(made))
    assert result.returncode == 0, result.stderr
    f16 = write_gguf(TINY, "f16", tmp_path / "f16.gguf", named="q4_k_m")
    by_hand = _quantize(f16, tmp_path / "by-hand.gguf", "Q4_K_M")
    assert made.read_bytes() == by_hand.read_bytes()
    assert identify(made).dtype == "Q4_K_M" and [p.name for p in made.parent.iterdir()] == ["q4km.gguf"]
    assert identify(made).name == f"pdx-synth-{TINY.name}-q4_k_m"


def _bench(*args) -> dict:
    result = run_pdx("bench", *args, "--json")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    return run


@pytest.mark.parametrize("backend", ["llamacpp-python", "llamacpp-bench"])
def test_a_tiny_moe_benchmark_is_judged_by_its_active_bytes(registry_url, moe_gguf, tmp_path, backend):
    model = _quantize(moe_gguf, tmp_path / "q4km.gguf", "Q4_K_M")
    run = _bench("--registry", registry_url, "--backend", backend, "-m", str(model), "-p", "32", "-n", "8",
                 "-r", "2", "-t", "1")
    figures = ceilings.model_figures(run["model"])
    assert figures.is_moe and figures.n_experts == TINY.n_experts
    assert "uniform routing" in run["ceiling_basis"]["routing"]
    for test in run["tests"]:
        record = test["ceilings"]
        # A probe cached while the machine was busy can sit below what a quiet run reaches: the
        # record then flags the rate (fraction > 1); the arithmetic is what is checked here.
        assert record["above_ceiling"] == (record["fraction"] > 1) and "routing" in record
        decode = record["phases"].get("decode")
        if decode:
            kv = figures.kv_bytes_at(decode["context"])
            assert decode["bytes_per_token"] == pytest.approx(figures.weight_bytes(1) + kv)
            assert decode["bytes_per_token"] < run["model"]["file_bytes"] - kv  # not every expert
            assert decode["experts_per_layer"] == pytest.approx(TINY.n_experts_used)


def test_a_batch_sweep_stores_the_expert_coverage_beside_the_rates(registry_url, moe_gguf):
    run = _bench("--registry", registry_url, "--backend", "llamacpp-python", "-m", str(moe_gguf), "-p", "0",
                 "-n", "8", "-b", "1,4", "-r", "1", "-t", "1")
    by_batch = {t["batch"]: t["ceilings"]["phases"]["decode"] for t in run["tests"]}
    k, e = TINY.n_experts_used, TINY.n_experts
    assert by_batch[1]["experts_per_layer"] == pytest.approx(k)
    assert by_batch[4]["experts_per_layer"] == pytest.approx(e * (1 - (1 - k / e) ** 4))
    assert all(t["stats"]["rate"]["mean"] > 0 and t["ceilings"]["fraction"] > 0 for t in run["tests"])


def test_placement_axes_make_a_run_each_and_reach_llama_bench(registry_url, moe_gguf):
    """`-ngl 0,99 -ncmoe 1`: two runs, each run's llama-bench given its -ngl and -ncmoe (its own JSON
    echoes them back per test); on this CPU build both place every weight in host memory anyway."""
    result = run_pdx("bench", "--registry", registry_url, "--backend", "llamacpp-bench", "-m", str(moe_gguf),
                     "-p", "16", "-n", "4", "-r", "1", "-t", "1", "-ngl", "0,99", "-ncmoe", "1", "--json")
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)
    assert [r["engine"]["settings"]["n_gpu_layers"] for r in runs] == [0, 99]
    for run in runs:
        assert run["engine"]["settings"]["n_cpu_moe"] == 1 and run["options"]["n_cpu_moe"] == "1"
        assert all(t["engine"].get("n_cpu_moe") == 1 for t in run["tests"])  # as llama-bench reported it


def test_the_in_process_path_refuses_n_cpu_moe_in_one_line(registry_url, moe_gguf):
    result = run_pdx("bench", "--registry", registry_url, "--backend", "llamacpp-python", "-m", str(moe_gguf),
                     "-p", "16", "-n", "0", "-r", "1", "-ncmoe", "1")
    assert result.returncode != 0 and "n_cpu_moe" in result.stderr and "llamacpp-bench" in result.stderr
