"""The synthetic tiny-moe in HF layout (MixtralForCausalLM) on real mlx-lm
(tox -e mlx: MLX's Linux CPU backend), with ceilings whose memory bound reads
the routed experts only, and the expert coverage of a batch stored."""

import json

import pytest

from pdx.domain import ceilings
from pdx.domain.synth import get_shape, write_hf

from conftest import run_pdx

pytestmark = pytest.mark.mlx
TINY = get_shape("tiny-moe")


def test_tiny_moe_on_mlx_is_judged_by_its_active_bytes(registry_url, tmp_path):
    model = write_hf(TINY, "float32", tmp_path / "tiny-moe")
    result = run_pdx("bench", "--json", "--registry", registry_url, "--backend", "mlx", "-m", str(model),
                     "-p", "32", "-n", "8", "-b", "1,4", "-r", "2")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    assert run["status"] == "complete" and run["model"]["architecture"] == "mixtral"
    figures = ceilings.model_figures(run["model"])
    assert figures.n_experts == TINY.n_experts and figures.active_params == TINY.active_params
    k, e = TINY.n_experts_used, TINY.n_experts
    for test in run["tests"]:
        record = test["ceilings"]
        # A probe cached on a busy machine can sit below a quiet run: then the rate is flagged, as checked.
        assert record["above_ceiling"] == (record["fraction"] > 1) and "uniform routing" in record["routing"]
        decode = record["phases"].get("decode")
        if decode:
            b = test["batch"]
            assert decode["experts_per_layer"] == pytest.approx(e * (1 - (1 - k / e) ** b))
            kv = figures.kv_bytes_at(decode["context"])
            assert decode["bytes_per_token"] == pytest.approx((figures.weight_bytes(b) + b * kv) / b)
