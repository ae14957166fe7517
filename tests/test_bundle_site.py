"""`pdx publish --bundles` at scale (pdx.reports.hub.bundle_site): the folder read in worker processes,
each run's page rendered there, the rest of the site built from runs without most samples.
The same folder must give byte for byte the site that every run held whole in memory gives;
a file that changes under the build, or a bad one, stops it and leaves the site as it was."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import runfactory
from conftest import run_pdx
from pdx.api.contrib.publish import publish_bundles
from pdx.contract.errors import PdxError
from pdx.registry import Registry, bundle
from pdx.registry import hub_folder as results_folder
from pdx.reports.hub import bundle_site
from pdx.reports.site.builder import publish
from pdx.reports.results import with_stats
from pdx.base.workers import WorkerFailed, ordered_map


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A results folder of 24 runs on 3 machines x 2 models x 2 backends (so configurations repeat
    and get comparison pages), as `pdx submit` writes it."""
    scratch = tmp_path_factory.mktemp("bundles")
    registry = Registry(f"sqlite:///{scratch / 'r.sqlite'}")
    try:
        records = registry.records(runfactory.fill(registry, 24, n_hardware=3, n_models=2))
    finally:
        registry.close()
    root = scratch / "runs"
    root.mkdir()
    for record in records:
        document = bundle.make_bundle([record], redact=True)
        (root / results_folder.file_name(document["runs"][0]["record"])).write_text(json.dumps(document))
    return root


def _files(site: Path) -> dict[str, str]:
    return {p.relative_to(site).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(site.rglob("*")) if p.is_file() and p.name != "pdx-site.json"}


def _whole_runs(root: Path) -> list[dict]:
    """Every run with every sample, newest first: what a site built in memory is given."""
    runs = {}
    for _, records in results_folder.iter_bundles(root):
        for record in records:
            runs.setdefault(record["id"], with_stats(record))
    return sorted(runs.values(), key=lambda r: r["created_at"], reverse=True)


def test_the_bundle_build_in_workers_is_the_in_memory_site_byte_for_byte(results, tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_site, "FILES_PER_TASK", 5)  # several tasks for each of the two workers
    publish(_whole_runs(results), tmp_path / "memory", title="hub")
    one = publish_bundles(results, tmp_path / "one", title="hub", workers=1)
    two = publish_bundles(results, tmp_path / "two", title="hub", workers=2)
    memory = _files(tmp_path / "memory")
    assert one.runs == two.runs == 24 and len(memory) > 60
    assert _files(tmp_path / "one") == memory
    assert _files(tmp_path / "two") == memory
    assert any(p.startswith("compare/") for p in memory)  # comparisons read both runs' samples again


def test_a_bundle_site_keeps_its_title_when_published_again_without_one(results, tmp_path):
    from pdx.reports.site.writer import SiteWriter

    site = tmp_path / "site"
    publish_bundles(results, site, title="hub", workers=1)
    again = publish_bundles(results, site, workers=1)
    assert json.loads((site / "index.json").read_text())["title"] == "hub" and again.changed == []
    SiteWriter(site).abandon()  # a build that stopped: the site keeps its name for the next
    publish_bundles(results, site, workers=1)
    assert json.loads((site / "pdx-site.json").read_text())["title"] == "hub"


def test_the_runs_list_pages_every_run_by_id_prefix(results, tmp_path):
    site = tmp_path / "site"
    publish_bundles(results, site)
    index = json.loads((site / "runs" / "index.json").read_text())
    assert index["total"] == 24 and len(index["runs"]) == 24
    paged = [s for entry in index["pages"] for s in json.loads((site / entry["path"]).read_text())["runs"]]
    assert sorted(s["id"] for s in paged) == sorted(s["id"] for s in index["runs"])
    assert all(s["id"].startswith(e["prefix"]) for e in index["pages"]
               for s in json.loads((site / e["path"]).read_text())["runs"])
    search = json.loads((site / "runs" / "search.js").read_text().removeprefix("window.PDX_RUNS = ")
                        .removesuffix(";\n"))
    assert [row[0] for row in search["rows"]] == [s["id"] for s in index["runs"]]
    assert len(search["hardware"]) == 3 and len(search["models"]) == 2


def test_a_file_changed_during_the_build_stops_it_and_the_site_stays(results, tmp_path, monkeypatch):
    work = tmp_path / "runs"
    work.mkdir()
    for path in results.iterdir():
        (work / path.name).write_bytes(path.read_bytes())
    site = tmp_path / "site"
    publish_bundles(work, site)
    before = _files(site)
    victim = sorted(work.iterdir())[3]
    read_folder = bundle_site.read_folder

    def then_edit(*args, **kwargs):
        found = read_folder(*args, **kwargs)
        victim.write_text(victim.read_text().replace('"redacted": true', '"redacted":true'))
        return found

    monkeypatch.setattr(bundle_site, "read_folder", then_edit)
    with pytest.raises(PdxError, match=f"{victim.name} changed while the site was being built"):
        publish_bundles(work, site, workers=2)
    assert _files(site) == before


def test_a_bad_file_read_by_a_worker_is_named_and_nothing_is_written(results, tmp_path):
    work = tmp_path / "runs"
    (work / "more").mkdir(parents=True)
    for path in results.iterdir():
        (work / path.name).write_bytes(path.read_bytes())
    bad = work / "more" / f"{'0' * 32}{results_folder.SUFFIX}"
    bad.write_text('{"format": "pdx-bundle", "runs": [')
    with pytest.raises(PdxError, match=r"`pdx hub verify` rejects it: more/0{32}\.pdx\.json: not valid JSON") as caught:
        publish_bundles(work, tmp_path / "site", workers=2)
    assert "--skip-rejected" in caught.value.hint
    assert not (tmp_path / "site").exists()
    # Left out on request, and named: the site is the rest of the folder.
    result = publish_bundles(work, tmp_path / "site", workers=2, skip_rejected=True)
    assert [line.split(": ")[0] for line in result.rejected] == [f"more/{'0' * 32}{results_folder.SUFFIX}"]
    assert result.runs == len(list(results.iterdir())) and (tmp_path / "site" / "index.html").exists()


def test_publish_refuses_a_folder_verify_rejects_or_leaves_those_files_out(results, tmp_path):
    """A run id in two files and two runs in one file: `pdx hub verify` rejects both, so does a build;
    with --skip-rejected the build leaves them out and lists them on stderr."""
    work = tmp_path / "runs"
    work.mkdir()
    originals = sorted(results.iterdir())
    for path in originals:
        (work / path.name).write_bytes(path.read_bytes())
    (work / "again.pdx.json").write_bytes(originals[0].read_bytes())  # the same run, a second file
    two = json.loads(originals[1].read_text())
    two["runs"] = two["runs"] + json.loads(originals[2].read_text())["runs"]
    (work / "two.pdx.json").write_text(json.dumps(two))
    verified = run_pdx("hub", "verify", str(work))
    assert verified.returncode == 1
    refused = run_pdx("publish", "--bundles", str(work), str(tmp_path / "site"))
    assert refused.returncode == 2 and "`pdx hub verify` rejects it: again.pdx.json" in refused.stderr
    assert not (tmp_path / "site").exists()
    skipped = run_pdx("publish", "--bundles", str(work), str(tmp_path / "site"), "--skip-rejected")
    assert skipped.returncode == 0, skipped.stderr
    left_out = {line.split(": ")[2] for line in skipped.stderr.splitlines() if line.startswith("pdx: left out: ")}
    assert left_out == {"again.pdx.json", "two.pdx.json"}
    assert f"published {len(originals)} runs" in skipped.stdout


def test_a_bad_file_added_to_a_published_folder_leaves_the_site_as_it_was(results, tmp_path):
    """Run pages are rendered while the folder is read, into a stage the writer commits only once
    every file has passed."""
    work = tmp_path / "runs"
    work.mkdir()
    for path in results.iterdir():
        (work / path.name).write_bytes(path.read_bytes())
    site = tmp_path / "site"
    publish_bundles(work, site, workers=2)
    before = _files(site)
    victim = sorted(work.iterdir())[-1]
    document = json.loads(victim.read_text())
    document["runs"][0]["record"]["threads"] = 99  # its digest no longer matches
    victim.write_text(json.dumps(document))
    with pytest.raises(PdxError, match=f"rejects it: {victim.name}: .*sha256"):
        publish_bundles(work, site, workers=2)
    assert _files(site) == before
    assert not [p for p in site.iterdir() if p.name.startswith(".pdx-")]  # the stage is gone too


def test_a_run_in_two_files_is_refused_or_published_from_the_first_in_name_order(results, tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_site, "FILES_PER_TASK", 1)  # each copy rendered by its own worker
    work = tmp_path / "runs"
    work.mkdir()
    first = sorted(results.iterdir())[0]
    document = json.loads(first.read_text())
    record = document["runs"][0]["record"]
    (work / first.name).write_text(json.dumps(document))
    record["tags"] = ["a later copy"]
    document["runs"][0]["sha256"] = bundle.digest(record)
    (work / f"{'f' * 32}{results_folder.SUFFIX}").write_text(json.dumps(document))
    site = tmp_path / "site"
    with pytest.raises(PdxError, match=f"rejects it: {'f' * 32}{results_folder.SUFFIX}: "):
        publish_bundles(work, site, workers=2)  # as verify: one run, one file
    result = publish_bundles(work, site, workers=2, skip_rejected=True)
    assert result.runs == 1
    assert {line.split(": ")[0] for line in result.rejected} == {f"{'f' * 32}{results_folder.SUFFIX}"}
    page = json.loads((site / "runs" / f"{record['id']}.json").read_text())
    assert page["run"]["tags"] != ["a later copy"]



def test_workers_keep_the_order_of_the_tasks_and_raise_what_a_task_raises():
    tasks = [list(range(n)) for n in (5, 0, 3, 9, 1, 4, 7)]
    assert list(ordered_map("builtins:len", tasks, workers=3)) == [5, 0, 3, 9, 1, 4, 7]
    assert list(ordered_map("builtins:len", [], workers=2)) == []
    with pytest.raises(ValueError, match="invalid literal"):
        list(ordered_map("builtins:int", ["1", "2", "x", "4"], workers=2))


def test_a_worker_that_dies_is_an_error_not_a_hang():
    with pytest.raises(WorkerFailed, match="worker process ended"):
        list(ordered_map("os:_exit", [3], workers=1))


def test_verify_in_workers_finds_what_one_process_finds(results, tmp_path, monkeypatch):
    from pdx.api.contrib import verify

    work = tmp_path / "runs"
    (work / "copies").mkdir(parents=True)
    files = sorted(results.iterdir())
    for path in files:
        (work / path.name).write_bytes(path.read_bytes())
    (work / "copies" / files[0].name).write_bytes(files[0].read_bytes())  # a duplicate
    (work / f"{'f' * 32}{results_folder.SUFFIX}").write_bytes(files[1].read_bytes())  # misnamed, same id
    tampered = json.loads(files[2].read_text())
    tampered["runs"][0]["record"]["tests"][0]["samples"][0]["ns"] += 1
    (work / files[2].name).write_text(json.dumps(tampered))
    (work / "copies" / f"{'e' * 32}{results_folder.SUFFIX}").write_text("not json")
    monkeypatch.setattr(verify, "FILES_PER_TASK", 4)  # several tasks for each of the two workers
    one = verify.verify_folder(work, workers=1)
    two = verify.verify_folder(work, workers=2)
    assert [str(p) for p in two.problems] == [str(p) for p in one.problems]
    assert (two.files, two.runs) == (one.files, one.runs) == (27, 25)  # the tampered file's run is not read
    found = "\n".join(str(p) for p in one.problems)
    for needle in ("duplicate of", "content id makes it", "does not match its sha256", "not valid JSON"):
        assert needle in found, found
