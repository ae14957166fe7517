"""Runs as plain records (the dicts `pdx show --json` prints) and back.

:func:`run_record` reads a stored run into a record; :func:`add_record`
writes a record as rows. The two are inverse, so a record that leaves one
registry (a bundle, ``pdx registry push``) reads back identically from
another. Shared rows (models, hardware, environments) are inserted only when
missing, with ``ON CONFLICT DO NOTHING`` so that concurrent writers racing
to add the same model never fail.
"""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any, Mapping, overload

from sqlalchemy.orm import Session

from pdx.contract import build
from pdx.contract.model import Model as ModelRecord
from pdx.contract.model import record_of
from pdx.contract.record import LEVELS
from pdx.contract.record import Run as RunRecord
from pdx.registry.fields import REQUEST_COLUMNS as _REQUEST_FIELDS
from pdx.registry.fields import SAMPLE_FIELDS as _SAMPLE_FIELDS
from pdx.registry.fields import TEST_COLUMNS as _TEST_FIELDS
from pdx.registry.bundle_schema import load_schema
from pdx.registry.fields import TEST_OBJECTS, typed_fields
from pdx.registry.schema import Base, Environment, Hardware, Model, RequestRow, Run, RunTag, SampleRow, TestResult


@overload
def iso(value: datetime) -> str: ...


@overload
def iso(value: None) -> None: ...


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:  # SQLite hands back naive datetimes; they were stored as UTC
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat()  # the same text whatever the server's time zone


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def insert_missing(session: Session, table: type[Base], values: dict[str, Any]) -> None:
    """Insert a row unless one with its primary key exists, race-free on SQLite and PostgreSQL."""
    dialect = session.get_bind().dialect.name
    if dialect in ("sqlite", "postgresql"):
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            session.execute(sqlite_insert(table).values(**values).on_conflict_do_nothing())
        else:
            from sqlalchemy.dialects.postgresql import insert as postgresql_insert

            session.execute(postgresql_insert(table).values(**values).on_conflict_do_nothing())
    elif session.get(table, values["id"]) is None:
        session.add(table(**values))
        session.flush()


def environment_id(manifest: Mapping[str, Any]) -> str:
    """The id of an environment row: manifests that differ only in the command line, seed and threads share one."""
    stable = {k: v for k, v in manifest.items() if k not in ("command", "seed", "threads")}
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]


def add_shared_rows(session: Session, model: Mapping[str, Any], hardware: Mapping[str, Any],
                    environment: Mapping[str, Any], environment_id: str) -> None:
    insert_missing(session, Model, {k: v for k, v in model.items() if k != "sha256"} | {"id": model["sha256"]})
    insert_missing(session, Hardware, {"id": hardware["id"], "kind": hardware["kind"], "name": hardware["name"],
                                       "details": hardware})
    insert_missing(session, Environment, {
        "id": environment_id,
        "hostname": environment.get("hostname") or "",  # an import's manifest has None
        "os": environment.get("os") or "",
        "python": environment.get("python") or "",
        "pdx_version": environment.get("pdx_version") or "",
        "manifest": environment,
    })


def test_row(test: Mapping[str, Any]) -> TestResult:  # a TestRecord, or a checked test as JSON
    """The rows of one test record (an entry of a record's ``tests``), samples and requests included."""
    return TestResult(
        **{k: test[k] for k in _TEST_FIELDS}, started_at=parse_time(test["started_at"]),
        finished_at=parse_time(test["finished_at"]),
        # Absent or null: the column's own default ({} for engine and spec, NULL for the rest).
        **{k: test[k] for k in TEST_OBJECTS if test.get(k) is not None},
        # .get: a field the table gained after the record was made is absent from it (the schema allows it)
        samples=[SampleRow(idx=i, **{k: s.get(k) for k in _SAMPLE_FIELDS}) for i, s in enumerate(test["samples"])],
        requests=[RequestRow(**{k: r.get(k) for k in _REQUEST_FIELDS}, events=r["events"])
                  for r in test.get("requests") or ()],
    )


def add_record(session: Session, record: Mapping[str, Any], environment_id: str) -> None:  # a Run, or checked JSON
    """Write one run record (as :func:`run_record` makes them) with its tests and samples."""
    add_shared_rows(session, record["model"], record["hardware"], record["environment"], environment_id)
    session.add(run_row(record, environment_id))


def run_row(record: Mapping[str, Any], environment_id: str) -> Run:
    """The rows of one run record; its shared rows (model, hardware, environment) are :func:`add_shared_rows`'."""
    engine = record["engine"]
    return Run(
        id=record["id"], created_at=parse_time(record["created_at"]), finished_at=parse_time(record["finished_at"]),
        status=record["status"], backend=record["backend"], engine=engine["name"], engine_version=engine["version"],
        engine_commit=engine["commit"], engine_settings=engine["settings"], engine_details=engine["details"],
        threads=record["threads"], options=record["options"], workload=record["workload"],
        command=record["command"], error=record["error"], parent_id=record["parent_id"],
        pdx_version=record["pdx_version"], origin=record.get("origin", "pdx"),
        provenance=record.get("provenance", {}), ceiling_basis=record.get("ceiling_basis"),
        model_id=record["model"]["sha256"],
        hardware_id=record["hardware"]["id"], environment_id=environment_id,
        tags=[RunTag(tag=t) for t in dict.fromkeys(record["tags"])],
        tests=[test_row(t) for t in record["tests"]],
    )


def model_record(model: Model) -> ModelRecord:
    """A model's row as a record's entry: its table holds the sha256 as its id."""
    return record_of({c.name: getattr(model, c.name) for c in Model.__table__.columns} | {"sha256": model.id})


def run_record(run: Run | SimpleNamespace) -> RunRecord:  # a namespace: pdx.registry.bulk's rows
    """A stored run as a record: every field, every sample, no derived statistics."""
    tests = [
        build.test(
            t, [build.sample(**{k: getattr(s, k) for k in _SAMPLE_FIELDS}) for s in t.samples],
            ordinal=t.ordinal, started_at=iso(t.started_at), finished_at=iso(t.finished_at), status=t.status,
            error=t.error, warmup=t.warmup, **{k: getattr(t, k) for k in TEST_OBJECTS},
            requests=[{k: getattr(r, k) for k in _REQUEST_FIELDS} | {"events": [list(e) for e in r.events]}
                      for r in t.requests])
        for t in run.tests
    ]
    return build.run(
        id=run.id, status=run.status, created_at=iso(run.created_at), finished_at=iso(run.finished_at),
        backend=run.backend,
        engine=build.engine(run.engine, run.engine_version, run.engine_commit, run.engine_settings, run.engine_details),
        threads=run.threads, options=run.options, workload=run.workload, command=run.command, error=run.error,
        parent_id=run.parent_id, pdx_version=run.pdx_version, origin=run.origin, provenance=run.provenance,
        tags=sorted(t.tag for t in run.tags),  # a set (run_tags): each once, in one order whatever was given
        model=model_record(run.model), hardware=run.hardware.details, environment=run.environment.manifest,
        ceiling_basis=run.ceiling_basis, tests=tests)


# -- reading back: what a registry altered by hand can hold --------------------------------------

_Bounded = tuple[tuple[str, "int | None"], ...]  # fields, each with the least it may be (None: any)
_LEVELS = {name: level for name, level in LEVELS.items() if name in ("run", "test", "sample", "request")}


@functools.cache
def _rules(level: str) -> tuple[_Bounded, _Bounded, tuple[str, ...], tuple[str, ...]]:
    """A level's whole numbers and optional ones, each with the least it may be (as the bundle schema
    bounds it: what every write was checked against; None: any), and its objects and optional ones."""
    properties = load_schema()["$defs"][level]["properties"]
    kind = _LEVELS[level]

    def bounded(names: tuple[str, ...]) -> tuple[tuple[str, int | None], ...]:
        return tuple((name, properties.get(name, {}).get("minimum")) for name in names)

    return (bounded(typed_fields(kind, int, nullable=False)), bounded(typed_fields(kind, int, nullable=True)),
            typed_fields(kind, dict, nullable=False), typed_fields(kind, dict, nullable=True))


class _Damaged(Exception):
    pass


def _count(value: object, least: int | None) -> bool:
    return type(value) is int and (least is None or value >= least)


def _reads(block: Mapping[str, Any], level: str) -> bool:
    """Whether a level's block holds what readers compute with; a loop, not a walk: a run holds thousands
    of samples and requests."""
    whole, optional, objects, optional_objects = _rules(level)
    for name, least in whole:
        if not _count(block.get(name), least):
            return False
    for name, least in optional:
        value = block.get(name)
        if value is not None and not _count(value, least):
            return False
    for name in objects:
        if type(block.get(name)) is not dict:
            return False
    for name in optional_objects:
        value = block.get(name)
        if value is not None and not isinstance(value, dict):
            return False
    return True


def _level(block: Mapping[str, Any], level: str, where: str) -> None:
    """:func:`_reads`, raising what is wrong."""
    whole, optional, objects, optional_objects = _rules(level)
    for name in objects:
        if not isinstance(block.get(name), dict):
            raise _Damaged(f"{where}.{name}: {type(block.get(name)).__name__} where an object belongs")
    for name in optional_objects:
        if block.get(name) is not None and not isinstance(block[name], dict):
            raise _Damaged(f"{where}.{name}: {type(block[name]).__name__} where an object belongs")
    for (name, least), optional_one in [(rule, False) for rule in whole] + [(rule, True) for rule in optional]:
        value = block.get(name)
        if not (optional_one and value is None) and not _count(value, least):
            bound = "" if least is None else f" of at least {least}"
            raise _Damaged(f"{where}.{name}: {repr(value)[:40]} is not a whole number{bound}")


def damage(record: Mapping[str, Any]) -> str | None:
    """What in a stored run no reader can compute with, as "where: what" (a registry altered by hand: a
    negative sample, a count that is text, a JSON field of the wrong kind); None for a run that reads.
    Only what statistics, tables and pages read, as the bundle schema states it: the full validation
    runs on every write (:mod:`pdx.registry.validate`), and would double the cost of every read."""
    try:
        _level(record, "run", "run")
        engine = record["engine"]
        if not (isinstance(engine.get("settings"), dict) and isinstance(engine.get("details"), dict)):
            raise _Damaged("run.engine: its settings or details are not objects")
        if not isinstance(record["model"].get("extra"), dict):
            raise _Damaged("run.model.extra: not an object")
        if not all(isinstance(t, str) for t in record["tags"]):
            raise _Damaged("run.tags: a tag that is not text")
        if not isinstance(record["created_at"], str):
            raise _Damaged("run.created_at: no date")
        for i, test in enumerate(record["tests"]):
            where = f"tests[{i}]"
            _level(test, "test", where)
            if test["kind"] not in ("pp", "tg", "pg", "serve") or not isinstance(test["name"], str):
                raise _Damaged(f"{where}: kind {str(test['kind'])[:20]!r} is none pdx knows")
            for j, sample in enumerate(test["samples"]):
                if not _reads(sample, "sample"):
                    _level(sample, "sample", f"{where}.samples[{j}]")
            for j, request in enumerate(test["requests"]):
                if not _reads(request, "request"):
                    _level(request, "request", f"{where}.requests[{j}]")
                events = request["events"]
                if not isinstance(events, list) or not all(
                        isinstance(e, list) and len(e) == 2 and type(e[0]) is int and type(e[1]) is int
                        for e in events):
                    raise _Damaged(f"{where}.requests[{j}].events: not a list of [ns, tokens] pairs")
    except _Damaged as exc:
        return str(exc)
    except (KeyError, TypeError, AttributeError) as exc:
        return f"a field is missing or of the wrong kind ({type(exc).__name__}: {str(exc)[:60]})"
    return None
