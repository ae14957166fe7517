"""A second `pdx publish --bundles` reads only the files that are new or changed
(pdx.reports.bundle_cache), and still writes byte for byte the site a build from nothing writes;
a cache that is not one, a page removed from the site, another title, a failed build: each costs
reading files again, never a wrong page."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from pdx.errors import PdxError
from pdx.reports.bundle_cache import default_path
from pdx.reports.bundle_site import publish_bundles

from test_bundle_site import _files, results  # noqa: F401 (the fixture: 24 runs as `pdx submit` writes them)


@pytest.fixture
def folder(results, tmp_path) -> Path:  # noqa: F811
    copy = tmp_path / "runs"
    shutil.copytree(results, copy)
    return copy


def _fresh(folder: Path, site: Path, title: str = "hub") -> dict[str, str]:
    publish_bundles(folder, site, title=title, cache=False)
    return _files(site)


def test_a_new_bundle_is_the_only_file_read_and_the_site_is_as_built_from_nothing(folder, tmp_path):
    cache, site = tmp_path / "cache.sqlite", tmp_path / "site"
    files = sorted(folder.glob("*.pdx.json"))
    added = files.pop()
    moved = tmp_path / added.name
    added.rename(moved)
    first = publish_bundles(folder, site, title="hub", cache=cache)
    assert first.files_read == len(files) and first.runs == len(files)
    moved.rename(added)
    again = publish_bundles(folder, site, title="hub", cache=cache)
    assert again.files_read == 1 and again.runs == len(files) + 1
    assert f"runs/{json.loads(added.read_text())['runs'][0]['record']['id']}.html" in again.changed
    assert _files(site) == _fresh(folder, tmp_path / "fresh")
    still = publish_bundles(folder, site, title="hub", cache=cache)
    assert still.files_read == 0 and still.changed == []


def test_a_removed_or_changed_bundle_changes_the_site_as_a_build_from_nothing_does(folder, tmp_path):
    cache, site = tmp_path / "cache.sqlite", tmp_path / "site"
    publish_bundles(folder, site, title="hub", cache=cache)
    files = sorted(folder.glob("*.pdx.json"))
    files[0].unlink()
    document = json.loads(files[1].read_text())
    files[1].write_text(json.dumps(document, indent=1))  # the same run in other bytes
    again = publish_bundles(folder, site, title="hub", cache=cache)
    assert again.files_read == 1
    assert _files(site) == _fresh(folder, tmp_path / "fresh")


def test_a_page_gone_from_the_site_or_another_title_reads_its_files_again(folder, tmp_path):
    cache, site = tmp_path / "cache.sqlite", tmp_path / "site"
    publish_bundles(folder, site, title="hub", cache=cache)
    page = next((site / "runs").glob("*.html"))
    page.unlink()
    again = publish_bundles(folder, site, title="hub", cache=cache)
    assert again.files_read == 1 and page.is_file()
    retitled = publish_bundles(folder, site, title="another", cache=cache)
    assert retitled.files_read == len(list(folder.glob("*.pdx.json")))
    assert _files(site) == _fresh(folder, tmp_path / "fresh", title="another")


def test_pdx_own_cache_broken_is_set_aside_and_every_file_read(folder, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "pdx-cache"))
    site = tmp_path / "site"
    cache = default_path(site)
    cache.write_bytes(b"not a database at all, but some other file" * 100)
    result = publish_bundles(folder, site, title="hub")
    assert result.files_read == len(list(folder.glob("*.pdx.json")))
    assert "unreadable" in capsys.readouterr().err and cache.with_name(cache.name + ".broken").is_file()
    assert publish_bundles(folder, site, title="hub").files_read == 0


def test_a_failed_build_leaves_the_cache_as_the_last_good_build_left_it(folder, tmp_path):
    cache, site = tmp_path / "cache.sqlite", tmp_path / "site"
    publish_bundles(folder, site, title="hub", cache=cache)
    before = _files(site)
    bad = folder / "zz-broken.pdx.json"
    bad.write_text("{ not json")
    with pytest.raises(PdxError, match="zz-broken"):
        publish_bundles(folder, site, title="hub", cache=cache)
    assert _files(site) == before
    bad.unlink()
    assert publish_bundles(folder, site, title="hub", cache=cache).files_read == 0


def test_a_file_given_as_the_cache_that_is_not_one_is_refused_and_left_alone(folder, tmp_path):
    registry = tmp_path / "registry.sqlite"
    db = sqlite3.connect(registry)
    db.execute("CREATE TABLE runs (id TEXT)")
    db.commit()
    db.close()
    before = registry.read_bytes()
    with pytest.raises(PdxError, match="is not a pdx site cache") as error:
        publish_bundles(folder, tmp_path / "site", title="hub", cache=registry)
    assert "\n" not in str(error.value) and registry.read_bytes() == before
    assert not (tmp_path / "site").exists() or not any((tmp_path / "site").rglob("*.html"))


def test_an_entry_that_does_not_read_back_has_its_file_read_again(folder, tmp_path):
    cache, site = tmp_path / "cache.sqlite", tmp_path / "site"
    publish_bundles(folder, site, title="hub", cache=cache)
    db = sqlite3.connect(cache)
    db.execute("UPDATE files SET entry = '{\"runs\": [{' WHERE rowid = (SELECT min(rowid) FROM files)")
    db.commit()
    db.close()
    assert publish_bundles(folder, site, title="hub", cache=cache).files_read == 1
    assert _files(site) == _fresh(folder, tmp_path / "fresh")
