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


def test_a_later_pdx_takes_a_version_1_bundle_through_its_update_step(tmp_path):
    """The update chain at work, as the change that bumps the bundle version will use it: a copy of pdx
    whose bundles are version 2 (one step, which tags each run) reads the version-1 files an older pdx
    wrote: hub verify, publish --bundles and import each see them updated; a version-1 file altered
    after it was written is refused by its own digests, in one line."""
    import os
    import subprocess
    import sys

    import pdx

    copy = tmp_path / "pkg" / "pdx"
    shutil.copytree(Path(pdx.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    code = copy / "registry" / "bundle.py"
    text = code.read_text()
    assert text.count("SCHEMA_VERSION = 1\n") == 1 and text.count("UPDATES: dict") == 1
    step = ("\n\ndef _update_to_2(document):\n"
            "    return document | {'runs': [entry | {'record': entry['record'] | "
            "{'tags': sorted({*entry['record']['tags'], 'from-v1'})}} for entry in document['runs']]}\n\n\n"
            "UPDATES[2] = _update_to_2\n")
    text = text.replace("SCHEMA_VERSION = 1\n", "SCHEMA_VERSION = 2\n")
    code.write_text(text.replace("\n\ndef _pick(", step + "\n\ndef _pick(", 1))
    schema = copy / "registry" / "bundle.schema.json"
    layout = json.loads(schema.read_text())
    assert layout["properties"]["schema_version"]["const"] == 1
    layout["properties"]["schema_version"]["const"] = 2
    schema.write_text(json.dumps(layout))
    env = dict(os.environ, PYTHONPATH=str(copy.parent))

    def later_pdx(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pdx", *args], capture_output=True, text=True, env=env,
                              timeout=300)

    folder = tmp_path / "results"
    files = _redacted_folder(folder)
    verified = later_pdx("hub", "verify", str(folder))
    assert verified.returncode == 0 and "2 run(s): no problem(s)" in verified.stdout, verified.stderr
    assert later_pdx("publish", "--bundles", str(folder), str(tmp_path / "site"), "--no-cache").returncode == 0
    for run_id in RUNS:
        assert "from-v1" in json.loads((tmp_path / "site" / "runs" / f"{run_id}.json").read_text())["run"]["tags"]
    again = subprocess.run(  # a site build reads a file a second time for its comparison pages
        [sys.executable, "-c", "import sys\nfrom pathlib import Path\nfrom pdx.registry import hub_folder\n"
         "sha, first = hub_folder.read_file(Path(sys.argv[1]), 'f')\n"
         "print(first == hub_folder.read_again(Path(sys.argv[1]), sha, 'f'), *first[0]['tags'])",
         str(files[RUNS[0]])], capture_output=True, text=True, env=env, timeout=120)
    assert again.stdout.split()[0] == "True" and "from-v1" in again.stdout.split(), again.stderr
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    imported = later_pdx("import", str(files[RUNS[0]]), "--registry", url)
    assert imported.returncode == 0, imported.stderr
    shown = json.loads(later_pdx("show", RUNS[0], "--registry", url, "--json").stdout)
    assert "from-v1" in shown["tags"] and shown["id"] == RUNS[0]  # tags are labels: the id stays
    altered = json.loads(files[RUNS[0]].read_text())
    altered["runs"][0]["record"]["command"] += " -r 9"
    (tmp_path / "altered.pdx.json").write_text(json.dumps(altered))
    refused = later_pdx("import", str(tmp_path / "altered.pdx.json"), "--registry", url)
    assert refused.returncode != 0 and "does not match its sha256" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_every_version_after_the_first_has_its_update_step():
    from pdx.registry.bundle import SCHEMA_VERSION, UPDATES

    assert set(UPDATES) == set(range(2, SCHEMA_VERSION + 1))
