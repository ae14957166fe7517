"""Bundles: runs in one JSON file that moves between registries.

A bundle holds run records exactly as ``pdx show --json`` prints them (less
the derived statistics), each with the SHA-256 of its canonical JSON; its
layout is ``bundle.schema.json`` beside this module (JSON Schema 2020-12),
versioned by ``schema_version``. Reading checks the size, the JSON, the
schema and every digest before anything is stored, and the registry then
stores all runs in one transaction, so a bad file changes nothing.

Run ids: a run pdx measures gets a uuid4 id when it starts (tests are
stored one by one, so its content does not exist yet); that id travels with
the run and identifies it everywhere. A run imported from another tool's
output has no such id: its id is the first 32 hex digits of the SHA-256 of
its content (:func:`content_id`, one version for every id and file name pdx
makes). Either way, importing the same run twice adds nothing: a run stored
under an id an older content-id version made is recognised by it
(:func:`known_ids`).
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeGuard, overload

import pdx
from pdx.contract.errors import ImportFileError, PdxError
from pdx.base.files import NotRegularFile, open_regular
from pdx.contract.numbers import parse_int
from pdx.registry.bundle_schema import SCHEMA_FILE, canonical, digest, field_path, schema_errors  # noqa: F401
from pdx.registry.fields import CONTENT_ID_FIELDS, CONTENT_ID_VERSION
from pdx.registry.redact import redact_record
from pdx.registry.validate import RecordError, check_records, check_shape

# Version 2: a run named by its content is named by the content id of version 2, which covers every stored
# measurement (pdx.registry.fields.CONTENT_ID_FIELDS).
SCHEMA_VERSION = 2
FORMAT = "pdx-bundle"
# How a bundle an older pdx wrote is read, as asv's results files are: UPDATES[n] takes a bundle of
# version n - 1 to version n, and a bundle is taken step by step to SCHEMA_VERSION before the schema
# (which knows only that version) and the registry see it. Fields added within a version are optional
# (NotRequired in pdx.contract.record) and need no step; tests/test_older_bundles.py shows the chain at work.
UPDATES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
# Files larger than this are refused before being read (PDX_IMPORT_MAX_BYTES overrides).
MAX_BYTES = 512 * 2**20


@overload
def _pick(block: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]: ...


@overload
def _pick(block: object, names: tuple[str, ...]) -> object: ...


def _pick(block: object, names: tuple[str, ...]) -> object:
    if not isinstance(block, dict):
        return block  # not a record's part: the record check refuses it; its hash need not be stable
    return {k: block[k] for k in names if k in block}


def content_id(record: Mapping[str, Any], version: int | None = None) -> str:
    """An id for a run that has none, and the name of its file in a results folder: a hash of every
    measurement it holds (not of its labels, nor of which file or pdx version brought it in). Only the
    fields of the content-id version count (:data:`pdx.registry.fields.CONTENT_ID_FIELDS`; ``version``
    is the current one unless an older one is asked for), so a field added later never changes an id."""
    fields = CONTENT_ID_FIELDS[version or CONTENT_ID_VERSION]
    body = _pick(record, fields["run"])
    if isinstance(body.get("model"), dict):
        body["model"] = _pick(body["model"], fields["model"])
    tests = []
    for test in body.get("tests") or ():
        test = _pick(test, fields["test"])
        for key, kind in (("samples", "sample"), ("requests", "request")):
            if key in test:
                test[key] = [_pick(item, fields[kind]) for item in test[key]]
        tests.append(test)
    if "tests" in body:
        body["tests"] = tests
    return digest(body)[:32]


def known_ids(record: dict[str, Any]) -> tuple[str, ...]:
    """The ids ``record`` may be stored under, its own first. A run named by its content (an imported one)
    may have been stored by an older pdx under that content's id of an older version (which left out
    energy, conditions...), so the registry recognises it by those too: importing the file again, or a
    bundle whose update re-identified it, adds nothing. A run with an id of its own (a uuid) has that one."""
    own = record.get("id")
    if not isinstance(own, str):
        return ()  # no id: check_records refuses the record before any id is looked up
    if not (len(own) == 32 and all(c in "0123456789abcdef" for c in own)):
        return (own,)  # not 32 hex digits: no content id (a uuid4 has that shape too, and the hashes tell)
    ids = [content_id(record, version) for version in CONTENT_ID_FIELDS]
    return (own, *dict.fromkeys(i for i in ids if i != own)) if own in ids else (own,)


def _reidentify(document: dict[str, Any]) -> dict[str, Any]:
    """Update step 1 -> 2: a run named by its content id of version 1 is named by version 2's, which covers
    its energy, conditions, request schedules and clients too (the same id where it holds none of them).
    A run with an id of its own keeps it. A registry that stored the run before finds it by its old id."""
    runs = []
    for entry in document["runs"]:
        record = entry["record"]
        if record.get("id") == content_id(record, 1):
            record = record | {"id": content_id(record, 2)}
        runs.append(entry | {"record": record})
    return document | {"runs": runs}


UPDATES[2] = _reidentify


def fail(source: str | Path, reason: str, hint: str | None = None) -> ImportFileError:
    """Why a file cannot be imported, in the one wording every reader of files uses."""
    return ImportFileError(f"cannot import {source}: {reason}", hint)


def validate_records(records: Sequence[Mapping[str, Any]], source: str) -> None:
    """Check records made by an importer with the registry's one record check."""
    try:
        check_records(records, "record")
    except PdxError as exc:
        raise fail(source, f"it yields an invalid run ({exc.message.removeprefix('record: ')})") from None


def make_bundle_document(entries: list[dict[str, Any]], redacted: bool) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "pdx_version": pdx.__version__,
        "exported_at": datetime.now(timezone.utc).isoformat(),
        "redacted": redacted,
        "runs": entries,
    }


def make_bundle(records: Sequence[Mapping[str, Any]], redact: bool = False) -> dict[str, Any]:
    kept: Sequence[Mapping[str, Any]] = [redact_record(r) for r in records] if redact else records
    return make_bundle_document([{"sha256": digest(r), "record": r} for r in kept], redact)


def max_bytes() -> int:
    """The largest file pdx reads: PDX_IMPORT_MAX_BYTES (a whole number of bytes), else :data:`MAX_BYTES`."""
    given = os.environ.get("PDX_IMPORT_MAX_BYTES")
    return parse_int(given, "PDX_IMPORT_MAX_BYTES", 1) if given and given.strip() else MAX_BYTES


def read_text(path: str | Path) -> str:
    """A file's text, refused whole if missing, oversized or not UTF-8; a UTF-8 byte-order mark (as
    Windows editors write) is no part of it."""
    path = Path(path)
    try:
        with open_regular(path) as fh:  # a named pipe, a device or a socket: refused, never opened to wait
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes():
                raise fail(path, f"{size} bytes is over the limit of {max_bytes()}",
                           "set PDX_IMPORT_MAX_BYTES to allow more")
            return fh.read(max_bytes() + 1).decode("utf-8-sig")
    except NotRegularFile as exc:
        raise fail(path, str(exc.strerror or exc),
                   "pdx reads regular files only: save it to a file and give that") from None
    except OSError as exc:
        raise fail(path, str(exc.strerror or exc)) from None
    except UnicodeDecodeError as exc:
        raise fail(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


class DuplicateKey(ValueError):
    """A JSON object naming one key twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return found


def loads(text: str) -> Any:  # JSON
    """JSON as every reader of files parses it: an object naming a key twice is refused
    (:class:`DuplicateKey`), since a digest covers one reading of it and another parser may keep
    the other value."""
    return json.loads(text, object_pairs_hook=_object)


def parse_json(text: str, source: str) -> Any:  # JSON
    try:
        return loads(text)
    except DuplicateKey as exc:
        raise fail(source, f"not valid JSON for pdx: an object names {exc.key[:40]!r} twice, and readers differ "
                           "on which value counts") from None
    except json.JSONDecodeError as exc:
        raise fail(source, f"not valid JSON (truncated?): {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # Python's own limit on a number's digits (4,300)
        raise fail(source, f"not valid JSON for pdx: {str(exc).split(':')[0].lower()}") from None
    except RecursionError:
        raise fail(source, "its JSON is nested too deep to be a pdx record or any tool's output") from None


def is_bundle(document: object) -> TypeGuard[dict[str, Any]]:
    return isinstance(document, dict) and document.get("format") == FORMAT


def _newer(version: object) -> bool:
    """Whether a bundle's schema_version (as written: 2, 2.0, "2") is a later one than pdx reads."""
    if isinstance(version, str):
        try:
            version = float(version.strip())
        except ValueError:
            return False  # no version at all: the schema check says so
    if version.__class__ is int:  # any size: 10**400 is a later version too (and no float)
        return version > SCHEMA_VERSION
    return version.__class__ is float and math.isfinite(version) and version > SCHEMA_VERSION


def updated(document: dict[str, Any], source: str) -> dict[str, Any]:
    """``document`` as a bundle of this pdx's version: each older one checked against its own digests
    (an update changes the records they hash), taken through :data:`UPDATES` step by step, and its
    digests made anew. A current bundle, or one whose version the schema refuses, as it is."""
    version = document.get("schema_version")
    if type(version) is not int or not 1 <= version < SCHEMA_VERSION:
        return document
    runs = document.get("runs")
    if not isinstance(runs, list) or not all(isinstance(e, dict) and isinstance(e.get("record"), dict) for e in runs):
        raise fail(source, f"not a valid pdx bundle of version {version} (its runs are not a list of records)")
    for i, entry in enumerate(runs):
        if entry.get("sha256") != digest(entry["record"]):
            raise fail(source, f"run {i} ({str(entry['record'].get('id'))[:32]}) does not match its sha256: "
                       "the file was altered or damaged")
    for step in range(version + 1, SCHEMA_VERSION + 1):
        try:
            document = UPDATES[step](document) | {"schema_version": step}
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:  # a record the step cannot read
            raise fail(source, f"not a valid pdx bundle of version {version}: it cannot be updated to version "
                               f"{step} ({type(exc).__name__}: {str(exc)[:80]!r})") from None
    return document | {"runs": [entry | {"sha256": digest(entry["record"])} for entry in document["runs"]]}


def read_bundle(document: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """The records of a parsed bundle, after checking its version, schema and digests; the registry
    checks each record (:mod:`pdx.registry.validate`) as it stores them."""
    if not is_bundle(document):
        raise fail(source, "not a pdx bundle (no \"format\": \"pdx-bundle\")", "check --format")
    version = document.get("schema_version")
    if _newer(version):
        raise fail(source, f"bundle schema version {str(version)[:20]} is newer than this pdx reads "
                           f"({SCHEMA_VERSION})", "upgrade pdx")

    try:
        check_shape(document, "bundle")  # before the schema and the digests: both recurse
    except RecordError as exc:
        raise fail(source, f"not a valid pdx bundle ({exc.message})") from None
    document = updated(document, source)
    problem = schema_errors(document)
    if problem:
        raise fail(source, f"not a valid pdx bundle ({problem})")
    for i, entry in enumerate(document["runs"]):
        if digest(entry["record"]) != entry["sha256"]:
            raise fail(source, f"run {i} ({entry['record']['id']}) does not match its sha256: "
                       "the file was altered or damaged")
    return [entry["record"] for entry in document["runs"]]
