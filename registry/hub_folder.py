"""A results folder: one run per ``<content id>.pdx.json`` bundle file, in any sub-folder.

Reading goes through the bundle reader (size, JSON, schema, digests), so a
folder that publishes is one whose every file passes those checks. What a
site is built from has no secret in it (:func:`pdx.base.secrets.redact_secrets`),
whoever wrote the file; ``pdx hub verify`` reads the files as they are.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterator

from pdx.contract.errors import PdxError
from pdx.registry import bundle
from pdx.registry.fields import FILE_NAME_VERSION
from pdx.base.secrets import redact_secrets

SUFFIX = ".pdx.json"
# Below this many files one process reads a folder (a worker's start costs about as much as 300
# files); above it, one worker per core (pdx.base.workers), each taking this many files at a time.
WORKERS_FROM = 500
FILES_PER_TASK = 200


def default_workers(n_files: int) -> int:
    """Worker processes to read a folder of ``n_files``: one per core, or none for a small folder."""
    return 1 if n_files < WORKERS_FROM else (os.cpu_count() or 1)


def file_name(record: dict, version: int = FILE_NAME_VERSION) -> str:
    """The name a run's bundle file has in a results folder: its content id of ``version``, which covers
    every stored measurement (energy and conditions too), so a file edited after it was named shows."""
    return f"{bundle.content_id(record, version)}{SUFFIX}"


def bundle_files(folder: str | Path) -> list[Path]:
    """Every bundle file under ``folder``, in a stable order; hidden folders (.git) skipped."""
    root = Path(folder)
    if not root.is_dir():
        raise PdxError(f"{folder} is not a folder", "give the results folder (a checkout of the results repository)")
    found = (p for p in root.rglob(f"*{SUFFIX}")
             if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def read_file(path: Path, name: str, redact: bool = True) -> tuple[str, list[dict]]:
    """The SHA-256 of one bundle file's text and its runs (``name`` is how errors call it), with no
    secret in them unless ``redact`` is false; ImportFileError if it is not a good bundle."""
    text = bundle.read_text(path)
    document = bundle.parse_json(text, name)
    if not bundle.is_bundle(document):
        raise bundle.fail(name, "not a pdx bundle (no \"format\": \"pdx-bundle\")")
    records = bundle.read_bundle(document, name)
    return hashlib.sha256(text.encode()).hexdigest(), [redact_secrets(r) for r in records] if redact else records


def read_records(path: Path, name: str) -> list[dict]:
    """The runs of one bundle file as it holds them (secrets too: verify names them); ImportFileError
    if it is not a good bundle."""
    return read_file(path, name, redact=False)[1]


def read_again(path: Path, sha256: str, name: str) -> list[dict]:
    """The runs of a file read (and checked) before in this build, as :func:`read_file` gave them (an older
    bundle updated): refused if its text has changed since."""
    text = bundle.read_text(path)
    if hashlib.sha256(text.encode()).hexdigest() != sha256:
        raise PdxError(f"{name} changed while the site was being built", "publish again once the folder is still")
    document = bundle.updated(bundle.parse_json(text, name), name)
    return [redact_secrets(entry["record"]) for entry in document["runs"]]


def iter_bundles(folder: str | Path) -> Iterator[tuple[str, list[dict]]]:
    """(relative name, records) per file; the first bad file raises, naming itself."""
    root = Path(folder)
    for path in bundle_files(root):
        name = path.relative_to(root).as_posix()
        yield name, read_records(path, name)
