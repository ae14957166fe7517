"""Bundles an older pdx wrote (tests/data/older_pdx: made by pdx at ed3d578, see its README) are read
by every command that reads bundles: hub verify, publish --bundles, import, show, report, publish."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import pdx_here, run_pdx_here
from pdx.registry.bundle import digest
from pdx.registry.hub_folder import file_name
from pdx.registry.redact import redact_record

OLDER = Path(__file__).parent / "data" / "older_pdx"
RUNS = sorted(p.name.removesuffix(".pdx.json") for p in OLDER.glob("*.pdx.json"))


def _redacted_folder(folder: Path) -> dict[str, Path]:
    """The older files copied to ``folder`` redacted as `pdx export --redact` would, still version 1 (a
    results folder takes redacted runs only), each named as a results folder names it; by run id."""
    shutil.copytree(OLDER, folder, ignore=shutil.ignore_patterns("*.md"))
    files = {}
    for path in sorted(folder.glob("*.pdx.json")):
        document = json.loads(path.read_text())
        for entry in document["runs"]:
            entry["record"] = redact_record(entry["record"])
            entry["sha256"] = digest(entry["record"])
        path.unlink()
        record = document["runs"][0]["record"]
        files[record["id"]] = folder / file_name(record)
        files[record["id"]].write_text(json.dumps(document))
    return files


def test_a_results_folder_an_older_pdx_wrote_verifies_and_publishes(tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(OLDER, folder, ignore=shutil.ignore_patterns("*.md"))
    refused = run_pdx_here("hub", "verify", str(folder))  # they hold the model's path: private
    assert refused.returncode == 1 and "model.path (path)" in refused.stdout, refused.stdout
    shutil.rmtree(folder)
    _redacted_folder(folder)
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


def test_a_version_1_bundle_is_updated_re_identified_and_verifies(tmp_path):
    """The update step 1 -> 2 at work. A run an older pdx named by its content id of version 1, which left
    its energy out, is re-identified by version 2's when read: hub verify passes its file (named by its
    content), publish --bundles gives its page that id, a registry the older pdx stored it in finds it by
    its old id and adds nothing, a fresh one stores it under the new id. A version-1 file altered after it
    was written is refused by its own digests, in one line."""
    from pdx.registry import hub_folder
    from pdx.registry.bundle import SCHEMA_VERSION, content_id
    from pdx.registry.store import Registry

    folder = tmp_path / "results"
    files = _redacted_folder(folder)
    path = files[RUNS[0]]
    document = json.loads(path.read_text())
    assert document["schema_version"] == 1 < SCHEMA_VERSION
    record = document["runs"][0]["record"]
    record["tests"][0]["energy"] = {"version": 1, "meters": [{"name": "cpu0", "covers": "cpu package"}],
                                    "joules": {"cpu0": 0.05}, "timed_s": 0.001, "idle_watts": None}
    old_id = record["id"] = content_id(record, 1)  # as an older pdx named it: energy not hashed
    new_id = content_id(record)
    assert new_id != old_id and new_id == content_id(record, 2)
    document["runs"][0]["sha256"] = digest(record)
    path.unlink()
    path = folder / file_name(record)
    path.write_text(json.dumps(document))

    verified = run_pdx_here("hub", "verify", str(folder))
    assert verified.returncode == 0 and "2 run(s): no problem(s)" in verified.stdout, verified.stdout
    published = run_pdx_here("publish", "--bundles", str(folder), str(tmp_path / "site"), "--no-cache")
    assert published.returncode == 0, published.stderr
    assert json.loads((tmp_path / "site" / "runs" / f"{new_id}.json").read_text())["run"]["id"] == new_id
    sha, first = hub_folder.read_file(path, "f")  # a site build reads a file again for its comparison pages
    assert first == hub_folder.read_again(path, sha, "f") and first[0]["id"] == new_id

    older = f"sqlite:///{tmp_path / 'older.sqlite'}"
    registry = Registry(older)  # where the older pdx stored the run, under its old id
    registry.add_records([json.loads(path.read_text())["runs"][0]["record"]])
    registry.close()
    again = run_pdx_here("import", str(path), "--registry", older)
    assert again.returncode == 0 and "imported 0 run(s)" in again.stdout, again.stdout + again.stderr
    assert [r["id"] for r in json.loads(pdx_here("runs", "--registry", older, "--json"))] == [old_id]
    fresh = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    pdx_here("import", str(path), "--registry", fresh)
    assert json.loads(pdx_here("show", new_id, "--registry", fresh, "--json"))["id"] == new_id

    altered = json.loads(path.read_text())
    altered["runs"][0]["record"]["tests"][0]["energy"]["joules"]["cpu0"] = 0.01
    (tmp_path / "altered.pdx.json").write_text(json.dumps(altered))
    refused = run_pdx_here("import", str(tmp_path / "altered.pdx.json"), "--registry", fresh)
    assert refused.returncode != 0 and "does not match its sha256" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_every_version_after_the_first_has_its_update_step():
    from pdx.registry.bundle import SCHEMA_VERSION, UPDATES

    assert set(UPDATES) == set(range(2, SCHEMA_VERSION + 1))
