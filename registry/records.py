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

_TEST_FIELDS = ("ordinal", "name", "kind", "n_prompt", "n_gen", "depth", "batch", "status", "error", "warmup")
_SAMPLE_FIELDS = ("ns", "n_prompt", "n_gen", "prompt_ns", "gen_ns", "engine")
_REQUEST_FIELDS = ("sample_idx", "idx", "role", "n_prompt", "max_tokens", "n_gen", "send_ns", "scheduled_ns",
                   "first_ns", "end_ns", "status", "error", "http_status", "finish_reason", "usage", "engine")


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
        "hostname": environment.get("hostname", ""),
        "os": environment.get("os", ""),
        "python": environment.get("python", ""),
        "pdx_version": environment.get("pdx_version", ""),
        "manifest": environment,
    })


def add_record(session: Session, record: dict, environment_id: str) -> None:
    """Write one run record (as :func:`run_record` makes them) with its tests and samples."""
    add_shared_rows(session, record["model"], record["hardware"], record["environment"], environment_id)
    engine = record["engine"]
    session.add(Run(
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
        tests=[
            TestResult(
                **{k: t[k] for k in _TEST_FIELDS}, started_at=parse_time(t["started_at"]),
                finished_at=parse_time(t["finished_at"]), engine=t["engine"], ceilings=t.get("ceilings"),
                adaptive=t.get("adaptive"), spec=t.get("spec") or {},
                samples=[SampleRow(idx=i, **{k: s[k] for k in _SAMPLE_FIELDS}) for i, s in enumerate(t["samples"])],
                requests=[RequestRow(**{k: r.get(k) for k in _REQUEST_FIELDS}, events=r["events"])
                          for r in t.get("requests") or ()],
            )
            for t in record["tests"]
        ],
    ))


def request_rows(outcome) -> list[RequestRow]:
    """The rows of every request a test sent: those of its samples, then those that failed before one."""
    owned = [(i, r) for i, s in enumerate(outcome.samples) for r in s.requests]
    owned += [(None, r) for r in outcome.requests]
    return [RequestRow(sample_idx=i, **{k: getattr(r, k) for k in _REQUEST_FIELDS if k != "sample_idx"},
                       events=[list(e) for e in r.events]) for i, r in owned]


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
        "tags": sorted(t.tag for t in run.tags),
        "model": model_record(run.model),
        "hardware": run.hardware.details,
        "environment": run.environment.manifest,
        "ceiling_basis": run.ceiling_basis,
        "tests": tests,
    }
