"""The bundle JSON Schema (registry/bundle.schema.json) and the canonical form records are hashed in:
what both the bundle reader and the record check use."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

SCHEMA_FILE = Path(__file__).with_name("bundle.schema.json")


def canonical(record: dict) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(record: dict) -> str:
    return hashlib.sha256(canonical(record)).hexdigest()


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))


@lru_cache(maxsize=None)
def _definition_validator(definition: str):
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text())
    return jsonschema.Draft202012Validator({"$schema": schema["$schema"], "$defs": schema["$defs"],
                                            "$ref": f"#/$defs/{definition}"})


def field_path(parts) -> str:
    """``["runs", 0, "record"]`` -> ``runs[0].record``: how every check names a field."""
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")
    return text or "top level"


def _first_error(validator, document: object) -> tuple[str, str] | None:
    error = next(iter(sorted(validator.iter_errors(document), key=lambda e: [str(p) for p in e.path])), None)
    if error is None:
        return None
    message = error.message if len(error.message) <= 160 else \
        f"a {type(error.instance).__name__} that breaks the schema's {error.validator!r} rule"
    return field_path(error.absolute_path), message


def schema_errors(document: object, definition: str | None = None) -> str | tuple[str, str] | None:
    """The first way ``document`` breaks the bundle schema, as one line, or None. With
    ``definition`` (a name under ``$defs``: run, test, ...), it is checked as one of those and
    the answer is (where, what)."""
    if definition:
        return _first_error(_definition_validator(definition), document)
    found = _first_error(_validator(), document)
    return None if found is None else f"{found[0]}: {found[1]}"
