"""llama-bench's markdown tables (what people paste into forum threads) and the
ceilings an imported run gets from the device its file or the user names."""

import json
from pathlib import Path

import pytest

from conftest import assert_one_line_error, pdx_here, pdx_import, run_pdx_here, show

DATA = Path(__file__).parent / "data"
M1_MAX = DATA / "llama_bench_forum_m1max.md"
RTX_4090 = DATA / "llama_bench_forum_rtx4090.md"




def napkin(hardware: str, model_bytes: str, params: str) -> dict:
    return json.loads(pdx_here("ceiling", "--hardware", hardware, "--model-bytes", model_bytes, "--params", params,
                               "--json"))


def test_every_table_of_a_forum_post(registry_url):
    done = pdx_import(registry_url, M1_MAX, "--hardware", "M1 Max")
    assert done["format"] == "llama-bench-md" and len(done["added"]) == 2  # two tables, two settings
    runs = [show(registry_url, r) for r in done["added"]]
    tests = {t["name"]: t for run in runs for t in run["tests"]}
    assert set(tests) == {"pp512", "tg128", "pp512@d4096", "tg128@d4096", "pp512+tg128"}
    assert tests["pp512@d4096"]["depth"] == 4096 and tests["pp512+tg128"]["kind"] == "pg"
    tg = tests["tg128"]
    assert tg["samples"] == [] and tg["stats"]["reported"]
    assert tg["stats"]["rate"]["mean"] == 61.19 and tg["stats"]["rate"]["stddev"] == 0.04
    for run in runs:
        assert run["engine"]["commit"] == "8e672efe" and run["engine"]["version"] == "b2710"
        assert run["model"]["file_bytes"] == round(3.56 * 2**30) and run["model"]["n_params"] == 6_740_000_000
        assert run["threads"] == 8 and run["engine"]["details"]["backends"] == "Metal,BLAS"
        assert run["hardware"]["catalog"] == "apple-m1-max" and run["hardware"]["kind"] == "soc"
    fa_run = next(r for r in runs if "pp512+tg128" in [t["name"] for t in r["tests"]])
    assert fa_run["engine"]["settings"]["flash_attn"] == "on"
    assert pdx_import(registry_url, M1_MAX, "--hardware", "M1 Max")["added"] == []  # twice adds nothing


def test_m1_max_decode_at_its_memory_bound_as_pdx_ceiling_says(registry_url):
    """The acceptance of issue 12: tg128 61.19 t/s of Llama-2-7B Q4_0 on an M1 Max against its memory bound,
    the same ceiling `pdx ceiling` gives for the table's size and parameters."""
    done = pdx_import(registry_url, M1_MAX, "--hardware", "M1 Max")
    tests = {t["name"]: (t, run) for run in (show(registry_url, r) for r in done["added"]) for t in run["tests"]}
    tg, run = tests["tg128"]
    # "llama 7B" at 6.74 B is the llama-2-7b shape: `pdx ceiling` with the table's size, count and that shape
    # reads the model as the import does (one row of the embedding table read per token, KV at tg128's depth).
    expected = json.loads(pdx_here("ceiling", "--hardware", "M1 Max", "--model-bytes", "3.56GiB", "--params", "6.74B",
                                   "--shape", "llama-2-7b", "--type", "q4_0", "-n", "128", "--json"))["decode"]
    assert tg["ceilings"]["source"] == "catalog" and run["model"]["extra"]["catalog_shape"]["name"] == "llama-2-7b"
    assert tg["ceilings"]["ceiling"] == pytest.approx(expected["ceiling"], rel=1e-9)
    every_weight = 400e9 / (3.56 * 2**30)  # 104.6 t/s: the bound if every byte of the file were read
    assert tg["ceilings"]["ceiling"] == pytest.approx(every_weight,
                                                      rel=0.02) and tg["ceilings"]["ceiling"] > every_weight
    assert tg["ceilings"]["fraction"] == pytest.approx(61.19 / expected["ceiling"], rel=1e-9)
    assert tg["ceilings"]["phases"]["decode"]["memory_bound"] == pytest.approx(expected["memory_bound"], rel=1e-9)
    basis = run["ceiling_basis"]
    assert basis["imported"] and basis["device_from"] == "--hardware" and basis["ref"] == "apple-m1-max"
    shown = pdx_here("show", run["id"], "--registry", registry_url)
    from pdx.reports.display.ceilings import rate

    assert "an imported run" in shown and "as reported" in shown and rate(expected["ceiling"]) in shown
    told = " ".join(shown.split())
    assert "KV reads: counted" in told and "figures from: pdx catalog" in told


def test_an_rtx_4090_table_gets_the_4090s_ceiling(registry_url, tmp_path):
    bare = tmp_path / "table.md"
    bare.write_text(RTX_4090.read_text().split("\n", 2)[2])  # the table without the sentence naming the card
    (plain,) = pdx_import(registry_url, bare)["added"]
    assert show(registry_url, plain)["ceiling_basis"]["source"] == "none"  # the table names no device
    assert "give --hardware NAME" in show(registry_url, plain)["ceiling_basis"]["reason"]
    (from_text,) = pdx_import(registry_url, RTX_4090)["added"]  # "RTX 4090, CUDA build, ..." above the table
    assert show(registry_url, from_text)["hardware"]["catalog"] == "nvidia-rtx-4090"
    assert "named in the text" in show(registry_url, from_text)["provenance"]["chip"]
    (named,) = pdx_import(registry_url, RTX_4090, "--hardware", "RTX 4090")["added"]
    run = show(registry_url, named)
    assert run["hardware"]["catalog"] == "nvidia-rtx-4090" and run["hardware"]["gpus"][0]["catalog"]
    tg = next(t for t in run["tests"] if t["name"] == "tg128")
    assert tg["ceilings"]["ref"] == "nvidia-rtx-4090" and tg["ceilings"]["bound"] == "memory"
    same = json.loads(pdx_here("ceiling", "--hardware", "RTX 4090", "--model-bytes", "3.56GiB", "--params", "6.74B",
                               "--shape", "llama-2-7b", "-n", "128", "--json"))["decode"]["ceiling"]
    assert tg["ceilings"]["ceiling"] == pytest.approx(same, rel=3e-3)  # the table's K cache is q8_0: a little less KV
    assert run["threads"] is None and run["engine"]["settings"]["n_gpu_layers"] == 99
    assert run["engine"]["settings"]["type_k"] == "q8_0" and run["engine"]["settings"]["n_ubatch"] == 512


def test_unknown_hardware_is_one_line(registry_url):
    result = run_pdx_here("import", str(M1_MAX), "--hardware", "M9 Ultra Max", "--registry", registry_url)
    assert_one_line_error(result, "unknown hardware")
    assert json.loads(pdx_here("runs", "--registry", registry_url, "--json")) == []


@pytest.mark.parametrize("damage, needle", [
    (lambda t: t.replace("61.19 ± 0.04", "61.x ± 0.04"), "is not a rate"),
    (lambda t: t.replace("tg128 |", "warp9 |", 1), "is not a llama-bench test"),
    (lambda t: t.replace("3.56 GiB |", "lots |", 1), "size 'lots'"),
    (lambda t: t.replace("|       8 |         tg128", "|  8 | 9 |         tg128"), "cells under"),
    (lambda t: t.replace("|       8 |         tg128", "|       x |         tg128"), "n_threads 'x'"),
    (lambda t: t.replace("61.19 ± 0.04", "0 ± 0.04"), "not positive"),
])
def test_a_damaged_table_stores_nothing(registry_url, tmp_path, damage, needle):
    path = tmp_path / "post.md"
    path.write_text(damage(M1_MAX.read_text()))
    assert_one_line_error(run_pdx_here("import", str(path), "--registry", registry_url), "cannot import", needle)
    assert json.loads(pdx_here("runs", "--registry", registry_url, "--json")) == []


def test_a_llama_bench_json_naming_its_gpu_gets_that_gpus_ceiling_and_renders(registry_url, tmp_path):
    """Issue 12: a non-empty gpu_info broke `pdx report` and `pdx publish`; now it names the device."""
    from test_import_hardening import LLAMA_BENCH

    gpu = LLAMA_BENCH | {"gpu_info": "NVIDIA GeForce RTX 4090", "backends": "CUDA", "n_gpu_layers": 99,
                         "model_type": "llama 7B Q4_0", "model_size": 3825065984, "model_n_params": 6738415616}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([gpu, gpu | {"n_prompt": 0, "n_gen": 4, "samples_ns": [20000000, 21000000]}]))
    (run_id,) = pdx_import(registry_url, path)["added"]
    run = show(registry_url, run_id)
    assert run["hardware"]["kind"] == "gpu" and run["hardware"]["catalog"] == "nvidia-rtx-4090"
    assert run["hardware"]["gpus"] == [run["hardware"]["gpus"][0]] and run["hardware"]["gpus"][0]["name"] == \
        "NVIDIA GeForce RTX 4090"
    assert run["ceiling_basis"]["device_from"] == "the imported file"
    tg = next(t for t in run["tests"] if t["kind"] == "tg")
    assert tg["ceilings"]["ref"] == "nvidia-rtx-4090" and tg["ceilings"]["fraction"] > 0
    pdx_here("report", "--registry", registry_url, "-o", str(tmp_path / "report.html"))
    pdx_here("publish", str(tmp_path / "site"), "--registry", registry_url)
    pages = {p.name for p in (tmp_path / "site").rglob("*.html")}
    assert any("rtx-4090" in p for p in pages)


def test_an_apple_cpu_info_names_the_soc(registry_url, tmp_path):
    from test_import_hardening import LLAMA_BENCH

    mac = LLAMA_BENCH | {"cpu_info": "Apple M1 Max", "gpu_info": "Apple M1 Max", "backends": "Metal,BLAS"}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([mac]))
    run = show(registry_url, pdx_import(registry_url, path)["added"][0])
    assert run["hardware"]["kind"] == "soc" and run["hardware"]["catalog"] == "apple-m1-max"
    assert run["hardware"]["gpus"] == [] and run["tests"][0]["ceilings"]["ref"] == "apple-m1-max"


def test_m1_max_json_with_the_exact_file_size(registry_url, tmp_path):
    """With llama-bench's exact model_size (JSON), Llama-2-7B Q4_0's tg128 at 61.19 t/s is 58% of the M1 Max's
    memory bound (105.7 t/s: "llama 7B" at 6.74 B is the llama-2-7b shape, so one row of the embedding table
    is read per token, and the KV cache at tg128's depth)."""
    from test_import_hardening import LLAMA_BENCH

    ns = round(128 / 61.19 * 1e9)
    tg = LLAMA_BENCH | {"cpu_info": "Apple M1 Max", "gpu_info": "Apple M1 Max", "backends": "Metal,BLAS",
                        "model_type": "llama 7B Q4_0", "model_size": 3825065984, "model_n_params": 6738415616,
                        "n_prompt": 0, "n_gen": 128, "samples_ns": [ns] * 3, "samples_ts": [61.19] * 3}
    path = tmp_path / "m1max.json"
    path.write_text(json.dumps([tg]))
    run = show(registry_url, pdx_import(registry_url, path)["added"][0])
    (test,) = run["tests"]
    expected = json.loads(pdx_here("ceiling", "--hardware", "M1 Max", "--model-bytes", "3825065984B", "--params",
                                   "6738415616", "--shape", "llama-2-7b", "-n", "128", "--json"))["decode"]["ceiling"]
    assert test["ceilings"]["ceiling"] == pytest.approx(expected, rel=1e-9) == pytest.approx(105.69, abs=0.01)
    assert f"{test['ceilings']['fraction']:.0%}" == "58%"
    assert "58%" in pdx_here("show", run["id"], "--registry", registry_url)


def test_a_moe_row_naming_a_catalog_shape_is_judged_by_its_active_experts(registry_url):
    """Issue 14: llama-bench's "gpt-oss 120B MXFP4 MoE" names the catalog's gpt-oss-120b, so the DGX Spark's
    60.57 t/s sits below a ceiling that reads 4 of 128 experts, not above one that reads every weight."""
    (run_id,) = pdx_import(registry_url, DATA / "llama_bench_forum_dgx_spark_moe.md", "--hardware", "DGX "
                           "Spark")["added"]
    run = show(registry_url, run_id)
    model = run["model"]
    assert model["extra"]["catalog_shape"]["name"] == "gpt-oss-120b"
    assert (model["n_layers"], model["n_kv_heads"], model["head_dim"]) == (36, 8, 64)
    experts = model["extra"]["experts"]
    assert (experts["count"], experts["used"]) == (128, 4) and experts["total_params"] == model["n_params"]
    assert experts["expert_bytes"] < model["file_bytes"]
    tg = next(t for t in run["tests"] if t["name"] == "tg32")
    assert 0.4 < tg["ceilings"]["fraction"] < 0.8 and not tg["ceilings"]["above_ceiling"]
    assert "uniform routing" in run["ceiling_basis"]["routing"]
    # Dense, every weight read: 273 GB/s over 63.4 GB is 4.3 t/s, and 60.57 t/s would be 14x "above" it.
    assert tg["ceilings"]["ceiling"] > 10 * 273e9 / model["file_bytes"]
    assert "catalog shape gpt-oss-120b" in pdx_here("show", run_id, "--registry", registry_url)


@pytest.mark.parametrize("row, why", [
    ("| gpt-oss 120B MXFP4 MoE | 11.27 GiB | 20.91 B | CUDA | 99 | tg32 | 60.57 ± 0.14 |", "other parameters"),
    ("| gpt-oss 50B MXFP4 MoE | 59.02 GiB | 116.83 B | CUDA | 99 | tg32 | 60.57 ± 0.14 |", "no such shape"),
])
def test_a_name_whose_figures_disagree_with_the_shape_is_left_as_it_was(registry_url, tmp_path, row, why):
    table = tmp_path / "post.md"
    table.write_text("| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | --: | ---: | "
                     "---: |\n"
                     f"{row}\n")
    (run_id,) = pdx_import(registry_url, table, "--hardware", "DGX Spark")["added"]
    model = show(registry_url, run_id)["model"]
    assert "catalog_shape" not in model["extra"] and "experts" not in model["extra"], why
