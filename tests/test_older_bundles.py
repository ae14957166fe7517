"""Bundles an older pdx wrote (tests/data/older_pdx: made by pdx at ed3d578, see its README) are read
by every command that reads bundles: hub verify, publish --bundles, import, show, report, publish."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import pdx_here, run_pdx_here

OLDER = Path(__file__).parent / "data" / "older_pdx"
RUNS = sorted(p.name.removesuffix(".pdx.json") for p in OLDER.glob("*.pdx.json"))


def test_a_results_folder_an_older_pdx_wrote_verifies_and_publishes(tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(OLDER, folder, ignore=shutil.ignore_patterns("*.md"))
    verified = run_pdx_here("hub", "verify", str(folder))
    assert verified.returncode == 0 and "2 run(s): no problem(s)" in verified.stdout, verified.stdout
    published = run_pdx_here("publish", "--bundles", str(folder), str(tmp_path / "site"), "--no-cache")
    assert published.returncode == 0, published.stderr
    for run_id in RUNS:
        page = (tmp_path / "site" / "runs" / f"{run_id}.html").read_text()
        assert "pp16" in page and "tg4" in page
        data = json.loads((tmp_path / "site" / "runs" / f"{run_id}.json").read_text())
        assert [t["name"] for t in data["run"]["tests"]] == ["pp16", "tg4"]


def test_an_older_bundle_imports_shows_reports_and_publishes_from_a_registry(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    for path in sorted(OLDER.glob("*.pdx.json")):
        pdx_here("import", str(path), "--registry", url)
    assert sorted(r["id"] for r in json.loads(pdx_here("runs", "--registry", url, "--json"))) == RUNS
    shown = json.loads(pdx_here("show", RUNS[0], "--registry", url, "--json"))
    assert shown["origin"] == "llama-bench" and all(t["stats"]["rate"]["mean"] > 0 for t in shown["tests"])
    assert "pp16" in pdx_here("show", RUNS[0], "--registry", url)
    pdx_here("report", "--registry", url, "-o", str(tmp_path / "report.html"))
    assert all(run_id[:12] in (tmp_path / "report.html").read_text() for run_id in RUNS)
    pdx_here("publish", str(tmp_path / "site"), "--registry", url)
    assert {p.stem for p in (tmp_path / "site" / "runs").glob("*.html")} >= set(RUNS)
