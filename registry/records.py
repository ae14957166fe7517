"""Runs as plain records (the dicts `pdx show --json` prints) and back.

:func:`run_record` reads a stored run into a record; :func:`add_record`
writes a record as rows. The two are inverse, so a record that leaves one
registry (a bundle, ``pdx registry push``) reads back identically from
another. Shared rows (models, hardware, environments) are inserted only when
missing, with ``ON CONFLICT DO NOTHING`` so that concurrent writers racing
to add the same model never fail.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy.orm import Session

from pdx.registry.schema import Environment, Hardware, Model, RequestRow, Run, RunTag, SampleRow, TestResult

from pdx.registry.fields import REQUEST_COLUMNS as _REQUEST_FIELDS
from pdx.registry.fields import SAMPLE_FIELDS as _SAMPLE_FIELDS
from pdx.registry.fields import TEST_COLUMNS as _TEST_FIELDS


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:  # SQLite hands back naive datetimes; they were stored as UTC
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat()  # the same text whatever the server's time zone


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def insert_missing(session: Session, table: type, values: dict) -> None:
    """Insert a row unless one with its primary key exists, race-free on SQLite and PostgreSQL."""
    dialect = session.get_bind().dialect.name
    if dialect in ("sqlite", "postgresql"):
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        session.execute(insert(table).values(**values).on_conflict_do_nothing())
    elif session.get(table, values["id"]) is None:
        session.add(table(**values))
        session.flush()


def add_shared_rows(session: Session, model: dict, hardware: dict, environment: dict, environment_id: str) -> None:
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


def test_row(test: dict) -> TestResult:
    """The rows of one test record (an entry of a record's ``tests``), samples and requests included."""
    return TestResult(
        **{k: test[k] for k in _TEST_FIELDS}, started_at=parse_time(test["started_at"]),
        finished_at=parse_time(test["finished_at"]), engine=test["engine"], ceilings=test.get("ceilings"),
        adaptive=test.get("adaptive"), conditions=test.get("conditions"), spec=test.get("spec") or {},
        # .get: a field the table gained after the record was made is absent from it (the schema allows it)
        samples=[SampleRow(idx=i, **{k: s.get(k) for k in _SAMPLE_FIELDS}) for i, s in enumerate(test["samples"])],
        requests=[RequestRow(**{k: r.get(k) for k in _REQUEST_FIELDS}, events=r["events"])
                  for r in test.get("requests") or ()],
    )


def add_record(session: Session, record: dict, environment_id: str) -> None:
    """Write one run record (as :func:`run_record` makes them) with its tests and samples."""
    add_shared_rows(session, record["model"], record["hardware"], record["environment"], environment_id)
    session.add(run_row(record, environment_id))


def run_row(record: dict, environment_id: str) -> Run:
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


def outcome_record(outcome, finished_at: datetime) -> dict:
    """A finished test of a running benchmark (a runner's outcome: its test spec, samples and
    requests) as a record's ``tests`` entry, so it is checked and stored as every record is."""
    test = outcome.test
    owned = [(i, r) for i, s in enumerate(outcome.samples) for r in s.requests]
    owned += [(None, r) for r in outcome.requests]
    return {
        "ordinal": outcome.ordinal, "name": test.name, "kind": test.kind, "n_prompt": test.n_prompt,
        "n_gen": test.n_gen, "depth": test.depth, "batch": test.batch, "status": outcome.status,
        "error": outcome.error, "warmup": outcome.warmup, "started_at": iso(outcome.started_at),
        "finished_at": iso(outcome.finished_at or finished_at), "engine": outcome.engine,
        "ceilings": outcome.ceilings, "adaptive": outcome.adaptive, "conditions": outcome.conditions,
        "spec": test.to_dict() if test.kind == "serve" else {},
        "samples": [{k: getattr(s, k, None) for k in _SAMPLE_FIELDS} for s in outcome.samples],
        "requests": [{"sample_idx": i} | {k: getattr(r, k, None) for k in _REQUEST_FIELDS if k != "sample_idx"}
                     | {"events": [list(e) for e in r.events]} for i, r in owned],
    }


def model_record(model: Model) -> dict:
    data = {c.name: getattr(model, c.name) for c in Model.__table__.columns}
    data["sha256"] = data["id"]
    return data


def run_record(run: Run) -> dict:
    """A stored run as a record: every field, every sample, no derived statistics."""
    tests = [
        {k: getattr(t, k) for k in _TEST_FIELDS}
        | {
            "started_at": iso(t.started_at),
            "finished_at": iso(t.finished_at),
            "engine": t.engine,
            "ceilings": t.ceilings,
            "adaptive": t.adaptive,
            "conditions": t.conditions,
            "spec": t.spec,
            "samples": [{k: getattr(s, k) for k in _SAMPLE_FIELDS} for s in t.samples],
            "requests": [{k: getattr(r, k) for k in _REQUEST_FIELDS} | {"events": [list(e) for e in r.events]}
                         for r in t.requests],
        }
        for t in run.tests
    ]
    return {
        "id": run.id,
        "status": run.status,
        "created_at": iso(run.created_at),
        "finished_at": iso(run.finished_at),
        "backend": run.backend,
        "engine": {
            "name": run.engine,
            "version": run.engine_version,
            "commit": run.engine_commit,
            "settings": run.engine_settings,
            "details": run.engine_details,
        },
        "threads": run.threads,
        "options": run.options,
        "workload": run.workload,
        "command": run.command,
        "error": run.error,
        "parent_id": run.parent_id,
        "pdx_version": run.pdx_version,
        "origin": run.origin,
        "provenance": run.provenance,
        "tags": sorted(t.tag for t in run.tags),  # a set (run_tags): each once, in one order whatever was given
        "model": model_record(run.model),
        "hardware": run.hardware.details,
        "environment": run.environment.manifest,
        "ceiling_basis": run.ceiling_basis,
        "tests": tests,
    }
