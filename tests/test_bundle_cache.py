"""A second `pdx publish --bundles` reads only the files that are new or changed
(pdx.reports.hub.bundle_cache), and still writes byte for byte the site a build from nothing writes;
a cache that is not one, a page removed from the site, another title, a failed build: each costs
reading files again, never a wrong page."""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pdx.api.contrib.publish import publish_bundles
from pdx.contract.errors import PdxError
from pdx.reports.hub.bundle_cache import BundleCache, default_path
from pdx.reports.site.runs import SiteRuns
from pdx.reports.site.writer import SiteWriter

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


@pytest.mark.parametrize("bent", ["one", "every"])
def test_an_entry_that_does_not_read_back_has_its_file_read_again(folder, tmp_path, monkeypatch, bent):
    cache, site = tmp_path / "cache.sqlite", tmp_path / "site"
    publish_bundles(folder, site, title="hub", cache=cache)
    db = sqlite3.connect(cache)
    which = "rowid = (SELECT min(rowid) FROM files)" if bent == "one" else "1"
    db.execute(f"UPDATE files SET entry = ? WHERE {which}", (zlib.compress(b'{"runs": [{'),))
    db.commit()
    db.close()
    stages = []
    made = SiteWriter.stage
    monkeypatch.setattr(SiteWriter, "stage", lambda self, prefix: stages.append(prefix) or made(self, prefix))
    read = publish_bundles(folder, site, title="hub", cache=cache).files_read
    assert read == (1 if bent == "one" else len(list(folder.glob("*.pdx.json"))))
    # The files read in this process share one stage (each stage copies the last build's page digests).
    assert stages == ["runs/"]
    assert _files(site) == _fresh(folder, tmp_path / "fresh")


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=4), max_leaves=20)


@pytest.fixture(scope="module")
def cache_file(results, tmp_path_factory) -> Path:  # noqa: F811
    """A cache a real build wrote, and one of its entries (for the property below to bend)."""
    scratch = tmp_path_factory.mktemp("cache")
    publish_bundles(results, scratch / "site", title="hub", cache=scratch / "cache.sqlite")
    return scratch / "cache.sqlite"


def _entry_reads(cache_file: Path, text: str):
    made_in = sqlite3.connect(cache_file).execute("SELECT value FROM meta WHERE key = 'context'").fetchone()[0]
    store = BundleCache.open(cache_file, made_in)
    try:
        digest = store.db.execute("SELECT digest FROM files LIMIT 1").fetchone()[0]
        store.db.execute("UPDATE files SET entry = ? WHERE digest = ?", (zlib.compress(text.encode()), digest))
        entry = store.get(digest)
        if entry is not None:  # whatever reads as an entry is one a build can take
            site_runs = SiteRuns()
            for run in entry["runs"]:
                site_runs.add_facts(run["facts"], None)
            site_runs.finish(lambda source, run_id: None)
        return entry
    finally:
        store.close()  # rolled back: the file stays as the build left it


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(json_values)
def test_an_entry_of_any_shape_reads_as_one_or_as_none(cache_file, value):
    _entry_reads(cache_file, json.dumps(value))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_real_entry_bent_anywhere_reads_as_one_or_as_none(cache_file, data):
    db = sqlite3.connect(cache_file)
    entry = json.loads(zlib.decompress(db.execute("SELECT entry FROM files LIMIT 1").fetchone()[0]))
    db.close()
    assert _entry_reads(cache_file, json.dumps(entry)) is not None  # the real one reads
    # Replace one value somewhere in it by any JSON value.
    node, path = entry, []
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(node) if isinstance(node, dict) else list(range(len(node)))))
        path.append(key)
        node = node[key]
    if path:
        holder = entry
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = data.draw(json_values)
    _entry_reads(cache_file, json.dumps(entry))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_site_built_on_a_bent_entry_is_built(results, cache_file, tmp_path_factory, data):  # noqa: F811
    """Whatever an entry reads as, the pages it reaches render (the build never stops on it)."""
    scratch = tmp_path_factory.mktemp("bent")
    shutil.copytree(cache_file.parent / "site", scratch / "site")
    shutil.copy(cache_file, scratch / "cache.sqlite")
    db = sqlite3.connect(scratch / "cache.sqlite")
    digest, text = db.execute("SELECT digest, entry FROM files LIMIT 1").fetchone()
    entry = json.loads(zlib.decompress(text))
    listed = entry["runs"][0]["facts"]["listing"]
    field = data.draw(st.sampled_from(sorted(listed)))
    listed[field] = data.draw(json_values)
    db.execute("UPDATE files SET entry = ? WHERE digest = ?", (zlib.compress(json.dumps(entry).encode()), digest))
    db.commit()
    db.close()
    result = publish_bundles(results, scratch / "site", title="hub", cache=scratch / "cache.sqlite")
    assert result.runs == len(list(results.glob("*.pdx.json")))
