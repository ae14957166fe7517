"""The one check every run record passes before it reaches a registry.

Whoever writes (``pdx bench`` test by test, ``pdx import`` of a bundle or of
another tool's output, ``pdx registry push`` and ``pull``), the record goes
through :func:`check_records` (or :func:`check_test` for one test of a
running benchmark): the bundle schema (``bundle.schema.json``: fields, types,
enums, lengths), then what a JSON Schema cannot say: every number finite,
integers within what the database column holds, text that UTF-8 can hold (no
lone surrogate), dates that parse and could be a measurement's, rates that
hardware could reach (:mod:`pdx.registry.plausibility`), a bounded depth and
size, one record per id, and a model identity that agrees with itself and
with the registry.

Readers of other tools' files convert values with the same small functions
(:func:`finite_number`, :func:`count`, :func:`timestamp`), so a bad value is
refused where it is read, naming the field.

Every refusal is a :class:`RecordError`: one line naming the record and the
field, raised before anything is written.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from functools import lru_cache
from typing import Iterable, Sequence

from pdx.contract.errors import PdxError
from pdx.registry.bundle_schema import digest, field_step, schema_errors
from pdx.registry.measurement_bounds import measurement_problem
from pdx.registry.plausibility import date_problem, rate_problem, rate_problem_of_test
from pdx.registry.schema import Model, RequestRow, SampleRow, TestResult

MAX_INT = 2**63 - 1  # a signed 64-bit column: SQLite's INTEGER, PostgreSQL's BIGINT
MAX_INT32 = 2**31 - 1  # PostgreSQL's INTEGER
MAX_DEPTH = 64  # containers inside containers; real records nest under 10
MAX_NODES = 50_000_000  # values in one record (a serving test's events are the bulk)
TIME_FIELDS = ("created_at", "finished_at")
TEST_TIME_FIELDS = ("started_at", "finished_at")
# A lone UTF-16 surrogate (a JSON escape such as \ud800, or a name the OS could not decode) is no
# text UTF-8 can hold: every writer of a record (the registry, a bundle, a page) would fail on it.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# What makes a model the model its sha256 names; name and path are where it was seen, not what it is.
IDENTITY_FIELDS = ("format", "architecture", "n_params", "dtype", "n_layers", "n_heads", "n_kv_heads", "head_dim",
                   "n_embd", "n_ff", "n_vocab", "n_ctx_train", "file_bytes", "synthetic")


class RecordError(PdxError):
    """A run record that breaks the record schema; nothing was stored."""


class _Invalid(Exception):
    """Raised inside the checks; turned into one :class:`RecordError` with the record named."""

    def __init__(self, where: str, problem: str) -> None:
        self.where, self.problem = where, problem


# -- values, for the registry and for readers of other tools' files ---------------------------------------

def finite_number(value: object, field: str, minimum: float = 0.0, above: bool = False) -> float:
    """``value`` as a float that is finite and at least ``minimum`` (above it with ``above``);
    numbers written as text ("1.5") are read, anything else is a :class:`RecordError`."""
    if isinstance(value, bool):
        raise RecordError(f"{field}: {value!r} is not a number")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise RecordError(f"{field}: {value[:40]!r} is not a number") from None
    if not isinstance(value, (int, float)):
        raise RecordError(f"{field}: {type(value).__name__} {str(value)[:40]!r} is not a number")
    try:
        number = float(value)
    except OverflowError:
        raise RecordError(f"{field}: {str(value)[:40]} is too large") from None
    if not math.isfinite(number):
        raise RecordError(f"{field}: {value!r} is not a finite number")
    if number < minimum or (above and number == minimum):
        raise RecordError(f"{field}: {value!r} is {'at or ' if above else ''}below {minimum:g}")
    return number


def count(value: object, field: str, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """``value`` as an int in [minimum, maximum]; a whole float (3.0) or decimal text ("3") is read."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{field}: {str(value)[:40]!r} is not a whole number")
    if not minimum <= value <= maximum:
        shown = str(value) if abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit number"
        raise RecordError(f"{field}: {shown} is outside {minimum}..{maximum}")
    return value


def timestamp(value: object, field: str) -> str:
    """``value`` (ISO 8601 text or a datetime) as ISO 8601 text that the registry can store."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise RecordError(f"{field}: {str(value)[:40]!r} is not an ISO 8601 date and time")


# -- whole records -------------------------------------------------------------------------------------------

def _bad_leaf(item: object) -> str | None:
    if item.__class__ is str:  # PostgreSQL stores no NUL in text; SQLite would, and then a pull to it fails
        if "\x00" in item:
            return "holds a NUL character, which the registry cannot store"
        return None if item.isascii() or not _SURROGATE.search(item) else _SURROGATE_PROBLEM
    if isinstance(item, float):
        return None if math.isfinite(item) else f"{item} is not a finite number"
    if isinstance(item, int) and not -MAX_INT - 1 <= item <= MAX_INT:
        return f"a {len(str(abs(item)))}-digit integer does not fit in 64 bits"
    if not isinstance(item, (str, int, float, type(None))):
        return f"a {type(item).__name__} is not a JSON value"
    return None


_SURROGATE_PROBLEM = "holds a lone UTF-16 surrogate, which is no text UTF-8 can store"


def _text_fine(text: str) -> bool:
    return text.isascii() or not _SURROGATE.search(text)


def _fine(value: object) -> bool:
    """Whether every number is finite and 64-bit and depth and size are bounded: no recursion (a record
    nested 100,000 deep is refused, not a stack overflow), and no work per value beyond a type test."""
    stack = [(value, 0)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
            if not all(k.__class__ is str and _text_fine(k) for k in item):
                return False
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            if _bad_leaf(item):
                return False
            continue
        nodes += len(children)
        if depth >= MAX_DEPTH or nodes > MAX_NODES:
            return False
        for child in children:
            if child.__class__ is str:
                if child.isascii() or not _SURROGATE.search(child):
                    continue
                return False
            if child.__class__ is bool or child is None:
                continue
            if child.__class__ is int:
                if not -MAX_INT - 1 <= child <= MAX_INT:
                    return False
                continue
            if child.__class__ is float:  # a record's many statistics: checked here, not pushed
                if child - child != 0.0:  # NaN or an infinity
                    return False
                continue
            stack.append((child, depth + 1))
    return True


def _walk(value: object, where: str) -> None:
    """Refuse what :func:`_fine` refuses, naming the first place (found again, slowly, only then)."""
    if _fine(value):
        return
    stack = [(value, where, 0)]
    nodes = 0
    while stack:
        item, path, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise _Invalid(where, f"holds over {MAX_NODES} values")
        if isinstance(item, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                raise _Invalid(path, f"nested over {MAX_DEPTH} levels deep")
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        raise _Invalid(path, f"key {key!r} is not text")
                    if not _text_fine(key):
                        raise _Invalid(path, f"a key {_SURROGATE_PROBLEM}")
                    stack.append((child, f"{path}{field_step(key)}", depth + 1))
            else:
                stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))
        elif _bad_leaf(item):
            raise _Invalid(path, _bad_leaf(item))


def check_shape(value: object, where: str) -> None:
    """Refuse a document too deep or too large to be checked further, or holding a number no
    record may (not finite, over 64 bits)."""
    try:
        _walk(value, where)
    except _Invalid as bad:
        raise RecordError(f"{bad.where}: {bad.problem}") from None


@lru_cache(maxsize=None)
def _column_limits() -> dict[str, dict[str, int]]:
    """The largest integer each typed field's column holds: one definition, the table's."""
    from sqlalchemy import BigInteger, Integer

    limits = {}
    for key, table in _TABLES().items():
        limits[key] = {c.name: MAX_INT if isinstance(c.type, BigInteger) else MAX_INT32
                       for c in table.__table__.columns if isinstance(c.type, Integer)}
    return limits


def _TABLES() -> dict:
    return {"model": Model, "test": TestResult, "sample": SampleRow, "request": RequestRow}


@lru_cache(maxsize=None)
def _not_null() -> dict[str, tuple[str, ...]]:
    """The fields whose columns hold no NULL: a record with null there could never be stored."""
    return {key: tuple(c.name for c in table.__table__.columns if not c.nullable)
            for key, table in _TABLES().items()}


def _fits(block: dict, kind: str, where: str) -> None:
    for name, limit in _column_limits()[kind].items():
        value = block.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > limit:
            raise _Invalid(f"{where}.{name}", f"{value} does not fit its column (at most {limit})")
    for name in _not_null()[kind]:
        if name in block and block[name] is None:
            raise _Invalid(f"{where}.{name}", "is null, and the registry stores a value there")


def _times(block: dict, names: Sequence[str], where: str) -> None:
    for name in names:
        value = block.get(name)
        if value is not None:
            try:
                when = value if isinstance(value, datetime) else datetime.fromisoformat(value.strip())
            except (ValueError, AttributeError):
                raise _Invalid(f"{where}.{name}", f"{str(value)[:40]!r} is not an ISO 8601 date and time") from None
            problem = date_problem(when)
            if problem:
                raise _Invalid(f"{where}.{name}", problem)


# Levels a run holds thousands of: each item is checked against its own definition in
# bundle.schema.json (a fast yes, jsonschema's reason for a no), so a bad sample is named by its place
# without jsonschema walking every good one.
_BULK = {"samples": "sample", "requests": "request"}


def _schema_problem(document: object, definition: str, where: str = "record") -> tuple[str, str] | None:
    """The schema's verdict on a run or test, its bulk levels item by item."""
    bulk: list[tuple[str, str, list]] = []
    if definition == "run" and isinstance(document, dict) and isinstance(document.get("tests"), list):
        tests = []
        for i, test in enumerate(document["tests"]):
            tests.append(_without_bulk(test, f"{where}.tests[{i}]", bulk))
        document = document | {"tests": tests}
    elif definition == "test":
        document = _without_bulk(document, where, bulk)
    problem = schema_errors(document, definition)
    if problem:
        return problem
    for where, name, items in bulk:
        for i, item in enumerate(items):
            found = schema_errors(item, name)
            if found:
                path, message = found
                raise _Invalid(f"{where}[{i}]" + ("" if path == "top level" else
                                                  path if path.startswith("[") else f".{path}"), message)
    return None


def _without_bulk(test: object, where: str, bulk: list) -> object:
    if not isinstance(test, dict):
        return test
    out = dict(test)
    for key, name in _BULK.items():
        if isinstance(test.get(key), list):
            bulk.append((f"{where}.{key}", name, test[key]))
            out[key] = []
    return out


def _check_test(test: dict, where: str) -> None:
    _times(test, TEST_TIME_FIELDS, where)
    _fits(test, "test", where)
    for i, sample in enumerate(test.get("samples") or ()):
        _fits(sample, "sample", f"{where}.samples[{i}]")
    for i, request in enumerate(test.get("requests") or ()):
        _fits(request, "request", f"{where}.requests[{i}]")
        _phases(request, f"{where}.requests[{i}]")


def _phases(request: dict, where: str) -> None:
    """A reasoning stream's phases agree with its stream: thinking is part of the tokens, and neither
    phase began before the first token."""
    thinking, tokens, first = request.get("n_reasoning"), request.get("n_gen"), request.get("first_ns")
    if isinstance(thinking, int) and isinstance(tokens, int) and not 0 < thinking <= tokens:
        raise _Invalid(f"{where}.n_reasoning", f"{thinking} thinking tokens of {tokens}: give 1 to n_gen, or null")
    for name in ("reasoning_ns", "answer_ns"):
        value = request.get(name)
        if isinstance(value, int) and isinstance(first, int) and value < first:
            raise _Invalid(f"{where}.{name}", f"{value} is before the first token ({first} ns from send)")


def _check_record(record: dict) -> None:
    _walk(record, "record")  # before the schema: its validator recurses
    problem = _schema_problem(record, "run")
    if problem:
        raise _Invalid(problem[0] if problem[0] == "top level" else f"record.{problem[0]}".replace(".[", "["),
                       problem[1])
    _times(record, TIME_FIELDS, "record")
    model = record["model"]
    if model["id"] != model["sha256"]:
        raise _Invalid("record.model.id", f"{model['id']} is not the model's sha256 {model['sha256']}")
    _fits(model, "model", "record.model")
    for i, test in enumerate(record["tests"]):
        _check_test(test, f"record.tests[{i}]")
    _plausible(record)


def _plausible(record: dict) -> None:
    """No rate faster than the fastest hardware pdx knows could run the record's model
    (:mod:`pdx.registry.plausibility`)."""
    problem = rate_problem(record)
    if problem:
        raise _Invalid(f"record.{problem[0]}", problem[1])
    _measurements(record.get("tests") or (), "record.tests")


def _measurements(tests, where: str) -> None:
    """No impossible speculation count or energy figure (:mod:`pdx.registry.measurement_bounds`)."""
    for i, test in enumerate(tests):
        problem = measurement_problem(test) if isinstance(test, dict) else None
        if problem:
            raise _Invalid(f"{where}[{i}]{problem[0]}", problem[1])


def _name(record: object, index: int) -> str:
    rid = record.get("id") if isinstance(record, dict) else None
    return f"run {index} ({rid})" if isinstance(rid, str) else f"run {index}"


def check_record(record: object, source: str = "record", index: int = 0,
                 hint: str = "nothing was stored; fix or re-export the source") -> None:
    """Refuse a run record (as ``pdx show --json`` prints it, less ``stats``) that the registry must not store."""
    if not isinstance(record, dict):
        raise RecordError(f"{source}: {_name(record, index)} is a {type(record).__name__}, not a run record")
    try:
        _check_record(record)
    except _Invalid as bad:
        raise RecordError(f"{source}: {_name(record, index)}: {bad.where.removeprefix('record.')}: {bad.problem}",
                          hint) from None


def identity(model: dict) -> dict:
    return {k: model.get(k) for k in IDENTITY_FIELDS}


def same_model(stored: dict, given: dict, where: str) -> None:
    """Refuse a model that claims the sha256 of a different model."""
    was, now = identity(stored), identity(given)
    if was != now:
        field = next(k for k in IDENTITY_FIELDS if was[k] != now[k])
        raise RecordError(f"{where}: model {given.get('sha256')} has {field} {now[field]!r}, but that sha256 is "
                          f"known as a model with {field} {was[field]!r}",
                          "a sha256 names one model: check the record's model (or the --model given)")


def check_records(records: Iterable[object], source: str) -> list[dict]:
    """Check every record of one write, and that they agree: one record per run id (identical
    copies count once) and one model per sha256. Returns the records without the repeats."""
    seen: dict[str, tuple[int, str]] = {}
    models: dict[str, dict] = {}
    unique = []
    for index, record in enumerate(records):
        check_record(record, source, index)
        content = digest(record)
        first = seen.get(record["id"])
        if first is not None:
            if first[1] != content:
                raise RecordError(f"{source}: runs {first[0]} and {index} have one id ({record['id']}) "
                                  "but differ", "a run id names one run: nothing was stored")
            continue
        seen[record["id"]] = (index, content)
        model = record["model"]
        if model["sha256"] in models:
            same_model(models[model["sha256"]], model, f"{source}: {_name(record, index)}")
        models[model["sha256"]] = model
        unique.append(record)
    return unique


def check_test(test: dict, where: str = "test") -> None:
    """Refuse one test of a running benchmark (a record's ``tests`` entry) before it is saved."""
    try:
        _walk(test, where)
        problem = _schema_problem(test, "test", where)
        if problem:
            raise _Invalid(where if problem[0] == "top level" else f"{where}.{problem[0]}".replace(".[", "["),
                           problem[1])
        _check_test(test, where)
        problem = rate_problem_of_test(test)  # the model is the run's: here only the bound every test has
        if problem:
            raise _Invalid(f"{where}{problem[0]}", problem[1])
        problem = measurement_problem(test)
        if problem:
            raise _Invalid(f"{where}{problem[0]}", problem[1])
    except _Invalid as bad:
        raise RecordError(f"cannot store {bad.where}: {bad.problem}",
                          "the backend produced a value the registry refuses: report it to its author") from None
