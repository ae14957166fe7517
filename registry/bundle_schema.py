"""The bundle JSON Schema (registry/bundle.schema.json) and the canonical form records are hashed in:
what both the bundle reader and the record check use."""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence, overload

from pdx.registry.fields import TABLES
from pdx.registry.schema_fast import Check, Unsupported, compile_schema

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from sqlalchemy import Column

SCHEMA_FILE = Path(__file__).with_name("bundle.schema.json")


def canonical(record: Mapping[str, Any]) -> bytes:
    # A lone surrogate passes through to the record check, which refuses it naming its field;
    # it changes no digest of a record that the check accepts.
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8",
                                                                                              "surrogatepass")


def digest(record: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(record)).hexdigest()


def column_rule(column: Column[Any]) -> dict[str, Any]:
    """The JSON Schema rule of a value stored in ``column`` (a SQLAlchemy column): its type, null where
    the column holds NULL, numbers not below 0, text no longer than the column."""
    from sqlalchemy import JSON, Boolean, Float, Integer, String

    kind = column.type
    rule: dict[str, Any]  # a JSON Schema rule
    if isinstance(kind, Boolean):
        rule = {"type": "boolean"}
    elif isinstance(kind, Integer):  # BigInteger too
        rule = {"type": "integer", "minimum": 0}
    elif isinstance(kind, Float):
        rule = {"type": "number", "minimum": 0}
    elif isinstance(kind, String):  # Text too
        rule = {"type": "string"} | ({"maxLength": kind.length} if kind.length else {})
    elif isinstance(kind, JSON):
        rule = {}
    else:
        raise TypeError(f"no record rule for column {column.name} of type {kind!r}")
    if column.nullable and "type" in rule:
        rule["type"] = [rule["type"], "null"]
    if column.comment:
        rule["description"] = column.comment
    return rule


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """bundle.schema.json, with a rule for every column of the ``samples`` and ``requests`` tables that
    it does not spell out (:data:`pdx.registry.fields.TABLES`): a field added to either table needs no
    edit here. Such a field is optional, so records made before it existed stay valid."""
    from sqlalchemy import Column

    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    for level, (table, row_only) in TABLES.items():
        properties = schema["$defs"][level]["properties"]
        for column in table.__table__.columns:
            assert isinstance(column, Column)  # a declarative table's: typed as any column expression
            if column.name not in row_only and column.name not in properties:
                properties[column.name] = column_rule(column)
    return schema


@lru_cache(maxsize=1)
def _strict_validator_class() -> type[Validator]:
    """Draft 2020-12 with "integer" meaning an integer as written (0, not 0.0), as the fast check
    has it: the registry's integer columns give an int back, so a whole float it accepted would not
    read back as it was stored."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("integer", lambda _, value: type(value) is int)
    extended: type[Validator] = jsonschema.validators.extend(base, type_checker=checker)  # jsonschema: untyped
    return extended


@lru_cache(maxsize=1)
def _validator() -> Validator:
    return _strict_validator_class()(load_schema())


@lru_cache(maxsize=None)
def _definition_validator(definition: str) -> Validator:
    schema = load_schema()
    return _strict_validator_class()({"$schema": schema["$schema"], "$defs": schema["$defs"],
                                      "$ref": f"#/$defs/{definition}"})


@lru_cache(maxsize=None)
def _fast_check(definition: str | None) -> Check | None:
    """The schema compiled to a yes-only predicate (:mod:`pdx.registry.schema_fast`); None if it cannot be."""
    try:
        return compile_schema(load_schema(), definition)
    except Unsupported:
        return None


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")


def field_step(part: object) -> str:
    """One step of a field's name: ``[0]``, ``.record``, or a key that is not a plain word written as
    ``['a\\nb']`` (escaped: a key from a file must not break the one-line error naming it)."""
    if isinstance(part, int):
        return f"[{part}]"
    text = str(part)
    return f".{text}" if _PLAIN_KEY.fullmatch(text) else f"[{text[:40]!r}]"


def field_path(parts: Sequence[object]) -> str:
    """``["runs", 0, "record"]`` -> ``runs[0].record``: how every check names a field."""
    text = "".join(field_step(p) for p in parts).lstrip(".")
    return text or "top level"


def _first_error(validator: Validator, document: object) -> tuple[str, str] | None:
    error = next(iter(sorted(validator.iter_errors(document), key=lambda e: [str(p) for p in e.path])), None)
    if error is None:
        return None
    message = error.message if len(error.message) <= 160 else \
        f"a {type(error.instance).__name__} that breaks the schema's {error.validator!r} rule"
    return field_path(error.absolute_path), message


@overload
def schema_errors(document: object, definition: None = None) -> str | None: ...


@overload
def schema_errors(document: object, definition: str) -> tuple[str, str] | None: ...


def schema_errors(document: object, definition: str | None = None) -> str | tuple[str, str] | None:
    """The first way ``document`` breaks the bundle schema, as one line, or None. With
    ``definition`` (a name under ``$defs``: run, test, ...), it is checked as one of those and
    the answer is (where, what)."""
    fast = _fast_check(definition)
    if fast is not None and fast(document):
        return None
    if definition:
        return _first_error(_definition_validator(definition), document)
    found = _first_error(_validator(), document)
    return None if found is None else f"{found[0]}: {found[1]}"
