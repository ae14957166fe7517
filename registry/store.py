"""The registry's public API: save runs test by test, read them back.

Every write is one short transaction: a test and all its samples land
together or not at all, so an interrupted benchmark leaves whole tests and
never half of one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable, Sequence

from sqlalchemy import Select, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from pdx.backend import EngineInfo
from pdx.errors import PdxError, RegistryError
from pdx.models import ModelInfo
from pdx.registry import bulk, connection, migrate
from pdx.registry.records import add_record, add_shared_rows, request_rows, run_record
from pdx.registry.schema import Hardware, Model, Run, RunTag, SampleRow, TestResult
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
    provenance: dict = field(default_factory=dict)
    created_at: datetime = field(default_factory=now)


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
            model = start.model.to_dict()
            add_shared_rows(session, model, start.hardware, start.environment, start.environment_id)
            session.get(Model, model["sha256"]).path = model["path"]  # where it was last seen
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
                    origin="pdx",
                    provenance=dict(start.provenance),
                    model_id=model["sha256"],
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
                    adaptive=outcome.adaptive,
                    conditions=outcome.conditions,
                    spec=test.to_dict() if test.kind == "serve" else {},
                    requests=request_rows(outcome),
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

    def runs(self, samples: bool = False, **filters: str | int | None) -> list[dict]:
        """Runs, newest first, with each test's statistics (and its raw samples if asked); ``filters``:
        those of :meth:`run_ids`."""
        with self._session() as session:
            return [
                with_stats(run_record(run), keep_samples=samples)
                for run in bulk.load_runs(session, self._query(**filters))
            ]

    def run_ids(self, **filters: str | int | None) -> list[str]:
        """The ids of :meth:`runs`, newest first, without loading the runs."""
        with self._session() as session:
            return list(session.scalars(self._query(**filters).with_only_columns(Run.id)))

    @staticmethod
    def _query(
        backend: str | None = None,
        model: str | None = None,
        tag: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        origin: str | None = None,
        hardware: str | None = None,
    ) -> Select:
        query = select(Run).order_by(Run.created_at.desc())
        if backend:
            query = query.where(Run.backend == backend)
        if model:
            query = query.join(Run.model).where(
                (Model.name.contains(model)) | (Model.id.startswith(model)) | (Model.synthetic == model)
            )
        if hardware:
            query = query.join(Run.hardware).where(Hardware.name.contains(hardware) | Hardware.id.startswith(hardware))
        if tag:
            query = query.where(Run.tags.any(RunTag.tag == tag))
        if status:
            query = query.where(Run.status == status)
        if origin:
            query = query.where(Run.origin == origin)
        return query.limit(limit) if limit else query

    def get_run(self, ref: str) -> dict:
        run_id = self.resolve(ref)
        with self._session() as session:
            run = session.get(Run, run_id)
            return with_stats(run_record(run))

    def get_runs(self, refs: Iterable[str]) -> list[dict]:
        return [self.get_run(ref) for ref in refs]

    # -- whole records: bundles, imports, push/pull ------------------------

    def records(self, ids: Iterable[str]) -> list[dict]:
        """Stored runs as records (no derived statistics), in the order given."""
        ids = [self.resolve(ref) for ref in ids]  # before the session: SQLite allows one at a time
        with self._session() as session:
            return [run_record(session.get(Run, run_id)) for run_id in ids]

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        ids = list(ids)
        found: set[str] = set()
        with self._session() as session:
            for chunk in bulk.chunks(ids):
                found |= set(session.scalars(select(Run.id).where(Run.id.in_(chunk))))
        return found

    def add_records(self, records: Sequence[dict]) -> tuple[list[str], list[str]]:
        """Store whole runs in one transaction: all of them or, on any error, none.

        A run whose id is already here is skipped (ids are unique, and imported
        runs' ids are content hashes), so adding the same records twice adds
        nothing. Returns (added ids, skipped ids).
        """
        from pdx.environment import environment_id

        present = self.existing_ids(r["id"] for r in records)
        added, skipped = [], []
        try:
            with self._session() as session, session.begin():
                for record in records:
                    if record["id"] in present or record["id"] in added:
                        skipped.append(record["id"])
                        continue
                    add_record(session, record, environment_id(record["environment"]))
                    added.append(record["id"])
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise RegistryError(f"nothing was stored in {self.display_url}: {reason}",
                                "adding runs is idempotent: run it again") from None
        return added, skipped
