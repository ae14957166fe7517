"""Every recorded file in tests/data, imported into one registry, then every reader
over it: runs, show (each run), report, publish, compare and check. Importers and
pages were once tested apart and a real import broke the site (issue 12)."""

import json
from pathlib import Path

import pytest

from conftest import assert_one_line_error, pdx_here, run_pdx_here

DATA = Path(__file__).parent / "data"
CORPUS = sorted(p for p in DATA.iterdir() if p.is_file() and p.name != "README.md")


def test_the_corpus_has_every_format():
    formats = {json.loads(pdx_here("import", str(p), "--registry", "sqlite://", "--json"))["format"]
               for p in CORPUS}
    assert formats >= {"vllm-bench-serve", "mlx-lm-benchmark", "llama-bench-json", "llama-bench-jsonl",
                       "llama-bench-sql", "llama-bench-md", "guidellm", "aiperf", "aiperf-records",
                       "vllm-bench-serve-text"}


@pytest.fixture
def everything(registry_url):
    added = []
    for path in CORPUS:
        done = json.loads(pdx_here("import", str(path), "--registry", registry_url, "--json"))
        # AIPerf's records file is the run of its export beside it: imported once, by whichever comes first.
        assert done["added"] or (done["format"].startswith("aiperf") and done["skipped"]), path
        added += done["added"]
        # Twice adds nothing.
        again = json.loads(pdx_here("import", str(path), "--registry", registry_url, "--json"))
        assert again["added"] == [] and sorted(again["skipped"]) == sorted(done["added"] or done["skipped"])
    return registry_url, added


def _shape_of(value):
    return {k: type(v).__name__ for k, v in value.items()} if isinstance(value, dict) else type(value).__name__


def test_imports_have_the_shapes_of_pdx_runs(everything):
    """Hardware, model and environment blocks: the keys pdx's own runs have, each of one type or null."""
    from pdx.measure.environment import collect
    from pdx.measure.hardware import detect

    url, ids = everything
    own_hardware, own_environment = detect(), collect(2, 0, ["pdx", "bench"])
    for run_id in ids:
        run = json.loads(pdx_here("show", run_id, "--registry", url, "--json"))
        hw, env = run["hardware"], run["environment"]
        assert set(own_hardware) <= set(hw) and set(own_environment) <= set(env), run_id
        assert set(own_hardware["cpu"]) <= set(hw["cpu"])
        for block, own in ((hw, own_hardware), (hw["cpu"], own_hardware["cpu"]), (env, own_environment)):
            for key, value in own.items():
                if block[key] is not None and value is not None:
                    assert type(block[key]) is type(value), (run_id, key, block[key], value)
        assert all(isinstance(g, dict) and "name" in g and "catalog" in g for g in hw["gpus"])
        assert run["ceiling_basis"] is not None  # says what is known, never "stored before pdx computed ceilings"


def test_every_reader_works_on_every_import(everything, tmp_path):
    url, ids = everything
    listed = json.loads(pdx_here("runs", "--registry", url, "--json"))
    assert sorted(r["id"] for r in listed) == sorted(ids)
    pdx_here("runs", "--registry", url)
    for run_id in ids:
        shown = pdx_here("show", run_id, "--registry", url)
        assert "stored before pdx computed ceilings" not in shown
    pdx_here("report", "--registry", url, "-o", str(tmp_path / "report.html"))
    assert (tmp_path / "report.html").stat().st_size > 0
    pdx_here("publish", str(tmp_path / "site"), "--registry", url)
    pages = list((tmp_path / "site").rglob("*.html"))
    assert len(pages) > len(ids)
    runs = {r: json.loads(pdx_here("show", r, "--registry", url, "--json")) for r in ids}
    pairs = [(a, b) for a in ids for b in ids if a < b and runs[a]["origin"] == runs[b]["origin"]
             and {t["name"] for t in runs[a]["tests"]} & {t["name"] for t in runs[b]["tests"]}]
    assert pairs
    for a, b in pairs:
        compared = run_pdx_here("compare", a, b, "--registry", url)
        assert compared.returncode in (0, 3) and "Traceback" not in compared.stderr  # 3: check's "nothing compared"
        if compared.returncode == 3:
            assert len(compared.stderr.strip().splitlines()) == 1 and "no raw samples" in compared.stderr
        checked = run_pdx_here("check", b, "--baseline", a, "--registry", url)
        assert checked.returncode in (0, 1, 3) and "Traceback" not in checked.stderr  # 1: a regression, not a crash
        if checked.returncode == 3:  # tables keep no samples: nothing to test, said in one line
            assert len(checked.stderr.strip().splitlines()) == 1 and "no raw samples" in checked.stderr
        pdx_here("report", a, b, "--registry", url, "-o", str(tmp_path / "pair.html"))


def test_a_text_that_is_no_table_is_refused(registry_url):
    result = run_pdx_here("import", str(DATA / "README.md"), "--registry", registry_url)
    assert_one_line_error(result, "cannot import")
    assert json.loads(pdx_here("runs", "--registry", registry_url, "--json")) == []
