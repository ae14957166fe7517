"""Ceilings on real llama.cpp runs (tox -e llamacpp): every pp/tg row gets
both bounds, the binding one named, the fraction reached, and the figures
used with their source, in the table, the JSON and the registry."""

import json
import re

import pytest

from conftest import run_pdx

pytestmark = pytest.mark.llamacpp


def _json(*args) -> list[dict]:
    result = run_pdx(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _check_test(test: dict, basis: dict) -> None:
    record = test["ceilings"]
    assert record["source"] == basis["source"] and record["bandwidth"] == basis["bandwidth"]
    assert record["flops"] == basis["flops"]
    for phase in record["phases"].values():
        bounds = {"memory": phase["memory_bound"], "compute": phase["compute_bound"]}
        assert phase["bound"] == min(bounds, key=bounds.get) and phase["ceiling"] == min(bounds.values())
    assert record["measured"] == pytest.approx(test["stats"]["rate"]["mean"])
    assert record["fraction"] == pytest.approx(record["measured"] / record["ceiling"])
    assert record["above_ceiling"] == (record["fraction"] > 1)


def test_every_row_has_its_ceilings_in_table_json_and_registry(registry_url, tiny_gguf):
    (run,) = _json("bench", "--registry", registry_url, "--backend", "llamacpp-python", "-m", str(tiny_gguf),
                   "-p", "32", "-n", "8", "-pg", "16,4", "-r", "2", "-t", "1")
    basis = run["ceiling_basis"]
    assert basis["source"] == "probe" and basis["probe"]["threads"] == run["threads"] == 1
    assert basis["compute_dtype"] == "fp16" and basis["probe"]["bandwidth"]["best"] == basis["bandwidth"]
    for test in run["tests"]:
        _check_test(test, basis)
    pg = run["tests"][2]["ceilings"]["phases"]
    assert pg["prefill"]["fraction"] > 0 and pg["decode"]["fraction"] > 0
    stored = json.loads(run_pdx("show", run["id"], "--registry", registry_url, "--json").stdout)
    assert [t["ceilings"] for t in stored["tests"]] == [t["ceilings"] for t in run["tests"]]
    text = run_pdx("show", run["id"], "--registry", registry_url).stdout
    assert "ceiling t/s" in text and "ceilings from probe, 1 thread" in text
    assert re.search(r"\btg8\b.*\d (mem|cmp) .*\d+%", text)


def test_a_catalog_chip_can_be_named_for_the_ceilings(registry_url, tiny_gguf):
    (run,) = _json("bench", "--registry", registry_url, "--backend", "llamacpp-python", "-m", str(tiny_gguf),
                   "-p", "16", "-n", "4", "-r", "1", "--hardware", "rtx 4090")
    assert run["ceiling_basis"]["ref"] == "nvidia-rtx-4090" and run["ceiling_basis"]["flops_dtype"] == "fp16"
    for test in run["tests"]:  # with this CPU's probe cached, each row is judged against both; the lower binds
        record = test["ceilings"]
        judged = record.get("sources") or {"catalog": record}
        assert judged["catalog"]["bandwidth"] == 1008e9
        assert record["ceiling"] == min(r["ceiling"] for r in judged.values() if r["ceiling"])
        if "probe" in judged:
            assert run["ceiling_basis"]["probe_figures"]["bandwidth"] == judged["probe"]["bandwidth"]
    line = run_pdx("bench", "--registry", registry_url, "-m", str(tiny_gguf), "--hardware", "rtx 9090")
    assert line.returncode != 0 and "unknown hardware 'rtx 9090'" in line.stderr


def test_200m_f16_at_one_and_two_threads_names_each_phase_s_bound(registry_url):
    # ENGINES.md's model (~200M, F16). Which bound binds is read from the probes, never assumed.
    from pdx.domain.synth import ensure_gguf

    model = ensure_gguf("200m", "f16")
    result = run_pdx("bench", "--registry", registry_url, "--backend", "llamacpp-python", "-m", str(model),
                     "-p", "64", "-n", "16", "-r", "2", "-t", "1,2")
    assert result.returncode == 0, result.stderr
    assert re.search(r"ceilings llamacpp-python 1t -> llamacpp-python 2t: bandwidth .* \(x[\d.]+\); "
                     r"FLOP/s", result.stdout)
    ids = re.findall(r"run ([0-9a-f]{32}) complete", result.stdout)
    runs = [json.loads(run_pdx("show", i, "--registry", registry_url, "--json").stdout) for i in ids]
    assert [r["threads"] for r in runs] == [1, 2]
    for run in runs:
        assert run["ceiling_basis"]["probe"]["threads"] == run["threads"]
        for test in run["tests"]:
            _check_test(test, run["ceiling_basis"])
            assert f"{test['name']}: " in result.stdout  # the move of each test's ceiling is printed
