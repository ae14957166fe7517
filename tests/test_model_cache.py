"""What reading a model file found is cached between calls (pdx.domain.models.cache): a GGUF file's identity
(metadata, tensor table, vocabulary size) and any file's content hash, keyed by path, size, mtime and
inode; a damaged or stale entry is ignored and written again; `pdx cache clear` forgets them all.
Every test writes a real GGUF file and reads it through pdx; the cache lives in a private directory."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import run_pdx_here
from pdx.domain.models import cache, identify
from pdx.domain.synth import get_shape, write_gguf


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def model(tmp_path, tiny_gguf):
    path = tmp_path / "m.gguf"
    shutil.copyfile(tiny_gguf, path)
    return path


def entry(private_cache, kind: str):
    entries = [p for p in (private_cache / kind).iterdir() if p.is_file()]
    assert len(entries) == 1, entries
    return entries[0]


def rename_in_cache(private_cache, name: str) -> None:
    """Edit the cached identity the way only the cache could hold it: a read that returns the new name
    came from the cache, not from the file."""
    target = entry(private_cache, cache.IDENTITIES)
    data = json.loads(target.read_text())
    data["info"]["name"] = name
    target.write_text(json.dumps(data))


def test_a_second_read_is_the_cached_identity(model, private_cache):
    first = identify(model)
    assert first.n_vocab > 0 and len(first.sha256) == 64
    rename_in_cache(private_cache, "from the cache")
    again = identify(model)
    assert again.name == "from the cache"
    assert again.to_dict() | {"name": first.name} == first.to_dict()


def test_a_changed_file_is_read_again(model, private_cache, tmp_path):
    first = identify(model)
    rename_in_cache(private_cache, "stale")
    write_gguf(get_shape("tiny"), "f16", model, seed=1)  # other weights, same size
    second = identify(model)
    assert second.name == first.name and second.sha256 != first.sha256
    rename_in_cache(private_cache, "stale")
    os.utime(model, ns=(model.stat().st_atime_ns, model.stat().st_mtime_ns + 10**9))  # only the mtime
    assert identify(model).name == first.name
    rename_in_cache(private_cache, "stale")
    with model.open("ab") as fh:  # only the size: a GGUF reader ignores bytes after the last tensor
        fh.write(b"\0" * 32)
    assert identify(model).name == first.name
    rename_in_cache(private_cache, "stale")
    moved = tmp_path / "moved.gguf"
    shutil.copyfile(model, moved)
    os.replace(moved, model)  # same path, a new file (a new inode); the new mtime may equal the old one
    assert identify(model).name == first.name


@pytest.mark.parametrize("damage", ["not json {", "[1, 2]", '{"version": 1}', "\xff\xfe binary",
                                    "wrong version", "a field of the wrong type", "a field missing", "a short hash"])
def test_a_damaged_entry_is_ignored_and_written_again(model, private_cache, damage):
    first = identify(model)
    target = entry(private_cache, cache.IDENTITIES)
    data = json.loads(target.read_text())
    if damage == "wrong version":
        data["version"] = cache.VERSION + 1
    elif damage == "a field of the wrong type":
        data["info"]["n_vocab"] = "32000"
    elif damage == "a field missing":
        del data["info"]["n_layers"]
    elif damage == "a short hash":
        data["info"]["sha256"] = "abc"
    if damage.startswith(("wrong", "a ")):
        target.write_text(json.dumps(data))
    else:
        target.write_bytes(damage.encode("latin-1"))
    assert identify(model).to_dict() == first.to_dict()
    assert json.loads(target.read_text())["info"] == first.to_dict()  # written again, whole


def test_a_damaged_content_hash_is_computed_again(model, private_cache):
    first = cache.content_hash(model)
    target = entry(private_cache, cache.HASHES)
    for damage in ("0" * 64, "garbage", json.dumps({"key": cache.file_key(model), "sha256": "f" * 63})):
        target.write_text(damage)
        assert cache.content_hash(model) == first
    data = json.loads(target.read_text())
    assert data == {"key": cache.file_key(model), "sha256": first}


def test_pdx_cache_clear_forgets_hashes_and_identities(model, private_cache):
    identify(model)
    rename_in_cache(private_cache, "from the cache")
    done = run_pdx_here("cache", "clear", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"hashes": 1, "identities": 1}
    assert identify(model).name != "from the cache"  # read from the file again
    done = run_pdx_here("cache", "clear")
    assert done.returncode == 0 and done.stdout.startswith("removed 1 content hash(es) and 1 model identity from ")


def test_a_cache_that_cannot_be_written_costs_only_time(model, private_cache):
    first = identify(model)
    shutil.rmtree(private_cache)
    private_cache.write_text("a file where the cache folder was")
    assert identify(model).to_dict() == first.to_dict()
    assert cache.content_hash(model) == first.sha256
