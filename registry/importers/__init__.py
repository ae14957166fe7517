"""Reading files into run records: pdx bundles and other tools' output.

:func:`read_file` detects the format (or takes the one named), parses the
whole file and returns validated records, with no secret left in them
(:func:`pdx.base.secrets.redact_secrets`: a file is passed around, its runs are
exported and published); nothing is stored until every record of the file is
good, and the registry then stores them in one transaction. Other tools'
formats are importers registered through the ``pdx_register_importers`` hook
(pdx's own in :mod:`.builtin`).
"""

from __future__ import annotations

from pathlib import Path

from pdx.base import plugin_manager
from pdx.contract.errors import PdxError
from pdx.registry.importers import builtin
from pdx.base.secrets import redact_secrets


def importers() -> dict:
    return plugin_manager.importers()


def formats() -> tuple[str, ...]:
    """Every ``--format`` value: auto, bundle, then each importer's."""
    return ("auto", "bundle", *importers())


def _json_or_none(text: str):
    # The bundle module brings SQLAlchemy's schema: imported when a file is read, not by every start of
    # pdx (which loads this package for its built-in importers' hook).
    from pdx.registry import bundle

    try:
        return bundle.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError and DuplicateKey are ValueErrors
        return None  # JSON Lines, or a damaged file (a key named twice too): the readers say which


def detect(text: str, source) -> tuple[str, object]:
    """The file's format, and its parsed JSON when it is one JSON document."""
    from pdx.registry import bundle  # see _json_or_none

    head = text.lstrip()[:4000]
    document = _json_or_none(text) if head[:1] in "[{" else None
    if bundle.is_bundle(document):
        return "bundle", document
    for name, importer in importers().items():
        if importer.detect is not None and _detects(importer, text, document, source):
            return name, document
    if head[:1] in "[{" and document is None:
        bundle.parse_json(text, str(source))  # says where the JSON breaks
    raise bundle.fail(source, f"not a format pdx imports (a pdx bundle, or: {', '.join(importers())})")


def _detects(importer, text: str, document: object, source) -> bool:
    from pdx.registry import bundle  # see _json_or_none

    try:
        return bool(importer.detect(text, document))
    except Exception as exc:  # a plugin's detector is not allowed to break pdx import
        if importer.plugin == builtin.PLUGIN:
            raise
        raise bundle.fail(source, f"the {importer.name} importer (plugin {importer.plugin}) failed to detect it: "
                                  f"{type(exc).__name__}: {exc}") from None


def read_file(path: str | Path, fmt: str = "auto", hardware: str | None = None) -> tuple[str, list[dict]]:
    """(format, records) of a file; raises ImportFileError with one line on any problem.

    ``hardware`` names the catalog chip the tool ran on where its output does not say.
    """
    path = Path(path)
    known = importers()
    if fmt not in ("auto", "bundle") and fmt not in known:
        raise PdxError(f"--format {fmt}: unknown format", f"use one of {', '.join(formats())}")
    from pdx.registry import bundle  # see _json_or_none

    text = bundle.read_text(path)
    if not text.strip():
        raise bundle.fail(path, "the file is empty")
    fmt, document = detect(text, path) if fmt == "auto" else (fmt, None)
    if document is None and (fmt == "bundle" or known[fmt].json):
        document = bundle.parse_json(text, str(path))  # says where the JSON breaks
    elif document is None and text.lstrip()[:1] in "[{":
        document = _json_or_none(text)
    if fmt == "bundle":
        if not bundle.is_bundle(document):
            raise bundle.fail(path, "not a pdx bundle (no \"format\": \"pdx-bundle\" object)",
                              "leave out --format to detect what it is")
        # A bundle's run keeps its id (it travels with the run); the digests were checked on what the file holds.
        return fmt, [redact_secrets(r) for r in bundle.read_bundle(document, str(path))]
    records = _read(known[fmt], path, text, document, hardware)
    bundle.validate_records(records, str(path))
    return fmt, [_without_secrets(r) for r in records]


def _without_secrets(record: dict) -> dict:
    """A tool's run with no secret in it; one named by its content's hash is named by what is left, so a
    run without secrets keeps its id, and one with them gets the id of the run as stored."""
    from pdx.registry import bundle  # see _json_or_none

    clean = redact_secrets(record)
    if clean is not record and record.get("id") == bundle.content_id(record):  # the same object: nothing hidden
        clean["id"] = bundle.content_id(clean)
    return clean


def _read(importer, path: Path, text: str, document: object, hardware: str | None) -> list[dict]:
    from pdx.registry import bundle  # see _json_or_none

    try:
        records = importer.read(path, text, document, hardware)
    except PdxError:
        raise
    except Exception as exc:
        if importer.plugin == builtin.PLUGIN:
            raise  # a bug in pdx: keep its traceback
        raise bundle.fail(path, f"the {importer.name} importer (plugin {importer.plugin}) failed: "
                                f"{type(exc).__name__}: {exc}") from None
    if not isinstance(records, list) or not records or not all(isinstance(r, dict) for r in records):
        raise bundle.fail(path, f"the {importer.name} importer returned no run records")
    return records
