"""What reading a model file found, kept between calls in pdx's cache directory: its content hash
(``hashes/``) and the whole identity of a GGUF file (``identities/``: metadata, tensor table and
vocabulary size, whose read parses every token of the vocabulary).

An entry is keyed by the file's resolved path, size, modification time and inode, and is used only
when all four still match; an entry that cannot be read, or reads as anything but what was written,
is ignored and written again. ``pdx cache clear`` (:func:`clear`) removes both kinds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path

from pdx.base.files import sha256_of
from pdx.base.paths import cache_dir

VERSION = 1  # of an identity entry's layout: an entry of another version is read as missing
HASHES, IDENTITIES = "hashes", "identities"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def file_key(path: Path) -> dict:
    """What must not have changed for a cached entry of ``path`` to hold."""
    stat = path.stat()
    return {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino,
            "device": stat.st_dev}


def _entry(kind: str, key: dict) -> Path:
    """Where ``key``'s entry of ``kind`` lives (the folder is made on first use: it may fail)."""
    return cache_dir(kind) / hashlib.sha256(key["path"].encode()).hexdigest()


def _write(kind: str, key: dict, data: dict) -> None:
    """Written whole or not at all (another pdx may read it meanwhile); a cache that cannot be
    written only costs the next call its time."""
    try:
        target = _entry(kind, key)
    except OSError:
        return
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _read(kind: str, key: dict) -> dict | None:
    """The entry of ``key`` if it is a JSON object written for that very key, else None."""
    try:
        data = json.loads(_entry(kind, key).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def content_hash(path: Path) -> str:
    """SHA-256 of a file's bytes, computed once per path, size, mtime and inode."""
    key = file_key(path)
    cached = _read(HASHES, key)
    if cached and _HEX64.fullmatch(str(cached.get("sha256"))):
        return cached["sha256"]
    value = sha256_of(path)
    _write(HASHES, key, {"key": key, "sha256": value})
    return value


def load_identity(key: dict) -> dict | None:
    """The identity stored under ``key``, or None (none, stale, another version, damaged);
    the caller checks the fields."""
    cached = _read(IDENTITIES, key)
    if not cached or cached.get("version") != VERSION:
        return None
    info = cached.get("info")
    return info if isinstance(info, dict) else None


def store_identity(key: dict, info: dict) -> None:
    _write(IDENTITIES, key, {"version": VERSION, "key": key, "info": info})


def clear() -> dict[str, int]:
    """Remove every cached hash and identity; how many of each were removed."""
    removed = {}
    for kind in (HASHES, IDENTITIES):
        removed[kind] = 0
        for entry in cache_dir(kind).iterdir():
            if entry.is_file():
                entry.unlink(missing_ok=True)
                removed[kind] += 1
    return removed
