"""The registry's public API: save runs test by test, read them back.

Every write is one short transaction: a test and all its samples land
together or not at all, so an interrupted benchmark leaves whole tests and
never half of one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from pdx.backend import EngineInfo
from pdx.errors import PdxError, RegistryError
from pdx.models import ModelInfo
from pdx.registry import connection, migrate
from pdx.registry.schema import Environment, Hardware, Model, Run, RunTag, SampleRow, TestResult
from pdx.results import with_stats
from pdx.runner import TestOutcome, now

RUN_STATUSES = ("running", "complete", "partial", "interrupted", "failed")


@dataclass
class RunStart:
    """Everything known about a run before its first test."""

    id: str
    backend: str
    engine: EngineInfo
    model: ModelInfo
    hardware: dict
    environment: dict
    environment_id: str
    workload: dict
    threads: int | None
    options: dict
    command: str
    pdx_version: str
    tags: Sequence[str] = ()
    parent_id: str | None = None
    ceiling_basis: dict | None = None
    created_at: datetime = field(default_factory=now)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:  # SQLite hands back naive datetimes; they were stored as UTC
        value = value.replace(tzinfo=timezone.utc)
    return value.isoformat()


class Registry:
    """A registry database: ``Registry(url)`` opens it and brings its schema up to date."""

    def __init__(self, url: str | None = None) -> None:
        self.url = connection.resolve_url(url)
        self.engine = connection.create(self.url)
        try:
            migrate.upgrade(self.engine)
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise RegistryError(f"cannot prepare registry {self.display_url}: {reason}") from None
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def display_url(self) -> str:
        return connection.display_url(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def _session(self) -> Session:
        return self._sessions()

    # -- writing ---------------------------------------------------------

    def start_run(self, start: RunStart) -> str:
        with self._session() as session, session.begin():
            model = start.model
            if session.get(Model, model.id) is None:
                session.add(Model(id=model.id, **{k: v for k, v in model.to_dict().items() if k != "sha256"}))
            else:
                session.get(Model, model.id).path = model.path
            if session.get(Hardware, start.hardware["id"]) is None:
                hw = start.hardware
                session.add(Hardware(id=hw["id"], kind=hw["kind"], name=hw["name"], details=hw))
            if session.get(Environment, start.environment_id) is None:
                env = start.environment
                session.add(
                    Environment(
                        id=start.environment_id,
                        hostname=env["hostname"],
                        os=env["os"],
                        python=env["python"],
                        pdx_version=env["pdx_version"],
                        manifest=env,
                    )
                )
            session.add(
                Run(
                    id=start.id,
                    created_at=start.created_at,
                    status="running",
                    backend=start.backend,
                    engine=start.engine.engine,
                    engine_version=start.engine.version,
                    engine_commit=start.engine.commit,
                    engine_settings=start.engine.settings,
                    engine_details=start.engine.details,
                    threads=start.threads,
                    options=dict(start.options),
                    workload=start.workload,
                    command=start.command,
                    pdx_version=start.pdx_version,
                    parent_id=start.parent_id,
                    ceiling_basis=start.ceiling_basis,
                    model_id=model.id,
                    hardware_id=start.hardware["id"],
                    environment_id=start.environment_id,
                    tags=[RunTag(tag=t) for t in dict.fromkeys(start.tags)],
                )
            )
        return start.id

    def save_test(self, run_id: str, outcome: TestOutcome) -> None:
        test = outcome.test
        with self._session() as session, session.begin():
            session.add(
                TestResult(
                    run_id=run_id,
                    ordinal=outcome.ordinal,
                    name=test.name,
                    kind=test.kind,
                    n_prompt=test.n_prompt,
                    n_gen=test.n_gen,
                    depth=test.depth,
                    batch=test.batch,
                    status=outcome.status,
                    error=outcome.error,
                    warmup=outcome.warmup,
                    started_at=outcome.started_at,
                    finished_at=outcome.finished_at or now(),
                    engine=outcome.engine,
                    ceilings=outcome.ceilings,
                    samples=[
                        SampleRow(
                            idx=i,
                            ns=s.ns,
                            n_prompt=s.n_prompt,
                            n_gen=s.n_gen,
                            prompt_ns=s.prompt_ns,
                            gen_ns=s.gen_ns,
                            engine=s.engine,
                        )
                        for i, s in enumerate(outcome.samples)
                    ],
                )
            )

    def finish_run(self, run_id: str, status: str, error: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        with self._session() as session, session.begin():
            run = session.get(Run, run_id)
            run.status = status
            run.error = error
            run.finished_at = now()

    # -- reading ---------------------------------------------------------

    def resolve(self, ref: str) -> str:
        """A full run id from an id or a unique prefix of one."""
        ref = ref.strip().lower()
        if len(ref) < 4:
            raise PdxError(f"run id {ref!r} is too short", "give at least 4 characters of a run id (see `pdx runs`)")
        with self._session() as session:
            ids = session.scalars(select(Run.id).where(Run.id.startswith(ref)).limit(2)).all()
        if not ids:
            raise PdxError(f"no run {ref!r} in registry {self.display_url}", "list runs with `pdx runs`")
        if len(ids) > 1:
            raise PdxError(f"run id {ref!r} is ambiguous", "give more characters of the id")
        return ids[0]

    def runs(
        self,
        backend: str | None = None,
        model: str | None = None,
        tag: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[dict]:
        """Runs, newest first, with each test's statistics but not its samples."""
        query = select(Run).order_by(Run.created_at.desc())
        if backend:
            query = query.where(Run.backend == backend)
        if model:
            query = query.join(Run.model).where(
                (Model.name.contains(model)) | (Model.id.startswith(model)) | (Model.synthetic == model)
            )
        if tag:
            query = query.where(Run.tags.any(RunTag.tag == tag))
        if status:
            query = query.where(Run.status == status)
        if limit:
            query = query.limit(limit)
        with self._session() as session:
            return [
                with_stats(self._run_dict(run), keep_samples=False) for run in session.scalars(query).unique()
            ]

    def get_run(self, ref: str) -> dict:
        run_id = self.resolve(ref)
        with self._session() as session:
            run = session.get(Run, run_id)
            return with_stats(self._run_dict(run))

    def get_runs(self, refs: Iterable[str]) -> list[dict]:
        return [self.get_run(ref) for ref in refs]

    @staticmethod
    def _model_dict(model: Model) -> dict:
        data = {c.name: getattr(model, c.name) for c in Model.__table__.columns}
        data["sha256"] = data["id"]
        return data

    def _run_dict(self, run: Run) -> dict:
        tests = []
        for t in run.tests:
            test = {
                "ordinal": t.ordinal,
                "name": t.name,
                "kind": t.kind,
                "n_prompt": t.n_prompt,
                "n_gen": t.n_gen,
                "depth": t.depth,
                "batch": t.batch,
                "status": t.status,
                "error": t.error,
                "warmup": t.warmup,
                "started_at": _iso(t.started_at),
                "finished_at": _iso(t.finished_at),
                "engine": t.engine,
                "ceilings": t.ceilings,
                "samples": [
                    {
                        "ns": s.ns,
                        "n_prompt": s.n_prompt,
                        "n_gen": s.n_gen,
                        "prompt_ns": s.prompt_ns,
                        "gen_ns": s.gen_ns,
                        "engine": s.engine,
                    }
                    for s in t.samples
                ],
            }
            tests.append(test)
        data = {
            "id": run.id,
            "status": run.status,
            "created_at": _iso(run.created_at),
            "finished_at": _iso(run.finished_at),
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
            "tags": sorted(t.tag for t in run.tags),
            "model": self._model_dict(run.model),
            "hardware": run.hardware.details,
            "environment": run.environment.manifest,
            "ceiling_basis": run.ceiling_basis,
            "tests": tests,
        }
        return data
