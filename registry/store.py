"""The registry's public API: save runs test by test, read them back.

Every write is one short transaction: a test and all its samples land
together or not at all, so an interrupted benchmark leaves whole tests and
never half of one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from typing_extensions import TypedDict, Unpack

from sqlalchemy import Select, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from pdx.contract import build
from pdx.contract.backend import EngineInfo
from pdx.contract.record import RUN_STATUSES
from pdx.contract.record import Run as RunRecord
from pdx.contract.record import Test as TestRecord
from pdx.contract.errors import PdxError, RegistryError
from pdx.contract.model import ModelInfo
from pdx.registry import bulk, connection, leases, migrate
from pdx.registry.bundle import known_ids
from pdx.registry.records import (add_record, add_shared_rows, damage, environment_id, iso, model_record,
                                  run_record, run_row, test_row)
from pdx.registry.schema import Hardware, Model, Run, RunTag
from pdx.registry.validate import check_record, check_records, check_test, same_model

UNREADABLE_HINT = ("the registry was altered or damaged; its other runs still read (`pdx runs`): export them by id, "
                   "or restore the registry from a copy")


def now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class RunStart:
    """Everything known about a run before its first test."""

    id: str
    backend: str
    engine: EngineInfo
    model: ModelInfo
    hardware: dict[str, Any]
    environment: dict[str, Any]
    environment_id: str
    workload: dict[str, Any]
    threads: int | None
    options: dict[str, Any]
    command: str
    pdx_version: str
    tags: Sequence[str] = ()
    parent_id: str | None = None
    ceiling_basis: dict[str, Any] | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=now)


def start_record(start: RunStart) -> RunRecord:
    """A run as it starts, as a record with no tests yet."""
    engine = start.engine
    return build.run(
        id=start.id, created_at=iso(start.created_at), backend=start.backend,
        engine=build.engine(engine.engine, engine.version, engine.commit, dict(engine.settings), dict(engine.details)),
        threads=start.threads, options=dict(start.options), workload=start.workload, command=start.command,
        parent_id=start.parent_id, pdx_version=start.pdx_version, provenance=dict(start.provenance), tags=start.tags,
        model=start.model.to_record(), hardware=start.hardware, environment=start.environment,
        ceiling_basis=start.ceiling_basis)


class RunFilters(TypedDict, total=False):
    """What :meth:`Registry.runs` and :meth:`Registry.run_ids` select by (each left out: any)."""

    backend: str | None
    model: str | None  # a name's part, a sha256's prefix or a synthetic model's name
    tag: str | None
    status: str | None
    limit: int | None
    origin: str | None
    hardware: str | None  # a name's part or an id's prefix


class Registry:
    """A registry database: ``Registry(url)`` opens it and brings its schema up to date."""

    def __init__(self, url: str | None = None, create: bool = True) -> None:
        """``create`` false: a registry that must already exist (the source of a pull), never made anew."""
        self.url = connection.resolve_url(url)
        self.engine = connection.create(self.url, create)
        try:
            migrate.upgrade(self.engine)
            migrate.check_tables(self.engine)
        except migrate.SchemaProblem as exc:
            raise RegistryError(f"cannot use registry {self.display_url}: {exc.message}", exc.hint) from None
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise RegistryError(f"cannot prepare registry {self.display_url}: {reason}") from None
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        #: runs that did not read (id: why), left out of :meth:`runs`; the CLI reports them
        self.unreadable: dict[str, str] = {}
        #: runs this opening found killed (their process gone from this machine) and marked interrupted
        self.reaped = self._reap()

    def _reap(self) -> list[str]:
        try:
            with self._session() as session, session.begin():
                return leases.reap(session, now())
        except SQLAlchemyError:  # a registry this process may only read: its runs stay as they are
            return []

    @property
    def display_url(self) -> str:
        return connection.display_url(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def _session(self) -> Session:
        return self._sessions()

    # -- writing ---------------------------------------------------------

    def start_run(self, start: RunStart) -> str:
        record = start_record(start)
        check_record(record, "cannot start run", hint="a backend or pdx made a value the registry refuses: report it")
        with self._session() as session, session.begin():
            add_shared_rows(session, record["model"], start.hardware, start.environment, start.environment_id)
            model = session.get(Model, record["model"]["sha256"])
            assert model is not None  # add_shared_rows has just added it, or found it there
            model.path = record["model"]["path"]  # where it was last seen
            session.add(run_row(record, start.environment_id))
            session.flush()  # the run's row before its lease's (no relationship orders the two)
            leases.take(session, start.id)  # given back by finish_run; a killed run's is found by reap
        return start.id

    def save_test(self, run_id: str, test: TestRecord) -> None:
        """Store one finished test, a record's ``tests`` entry (a runner's: ``TestOutcome.to_record()``),
        with its samples and requests."""
        check_test(test, f"{test['name']} of run {run_id}")
        with self._session() as session, session.begin():
            row = test_row(test)
            row.run_id = run_id
            session.add(row)

    def finish_run(self, run_id: str, status: str, error: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        with self._session() as session, session.begin():
            run = session.get(Run, run_id)
            if run is None:
                raise RegistryError(f"cannot finish run {run_id}: it is not in {self.display_url}",
                                    "it was removed while it ran, or the registry was replaced")
            run.status = status
            run.error = error
            run.finished_at = now()
            leases.give_back(session, run_id)

    # -- reading ---------------------------------------------------------

    def resolve(self, ref: str) -> str:
        """A full run id from an id or a unique prefix of one."""
        ref = ref.strip().lower()
        if len(ref) < 4:
            raise PdxError(f"run id {ref!r} is too short", "give at least 4 characters of a run id (see `pdx runs`)")
        with self._session() as session:
            ids = session.scalars(select(Run.id).where(Run.id.startswith(ref, autoescape=True)).limit(2)).all()
        if not ids:
            raise PdxError(f"no run {ref!r} in registry {self.display_url}", "list runs with `pdx runs`")
        if len(ids) > 1:
            raise PdxError(f"run id {ref!r} is ambiguous", "give more characters of the id")
        return ids[0]

    def runs(self, **filters: Unpack[RunFilters]) -> list[RunRecord]:
        """Stored runs as records, newest first; ``filters``: those of :meth:`run_ids`. Statistics are
        derived by the readers (:func:`pdx.reports.results.read_runs`), not here. A run that does not read
        (a registry altered by hand) is left out and named in :attr:`unreadable`, with why."""
        out: list[RunRecord] = []
        with self._session() as session:
            for run in bulk.load_runs(session, self._query(**filters), self.unreadable):
                try:
                    record = run_record(run)
                except bulk.READ_ERRORS as exc:
                    self.unreadable[run.id] = bulk.read_error(exc)
                    continue
                problem = damage(record)
                if problem:
                    self.unreadable[run.id] = problem
                else:
                    out.append(record)
        return out

    def _read(self, session: Session, run_id: str, hint: str = UNREADABLE_HINT) -> RunRecord:
        """One run as a record; a run that does not read is a one-line error naming why."""
        problem: str | None
        try:
            run = session.get(Run, run_id)
            if run is None:
                problem = "it is no longer there (removed since it was named)"
            else:
                record = run_record(run)
                problem = damage(record)
        except bulk.READ_ERRORS as exc:
            session.rollback()
            problem = bulk.read_error(exc)
        if problem:
            raise RegistryError(f"cannot read run {run_id} from {self.display_url}: {problem}", hint)
        return record

    def run_ids(self, **filters: Unpack[RunFilters]) -> list[str]:
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
    ) -> Select[Run]:
        query = select(Run).order_by(Run.created_at.desc())
        if backend:
            query = query.where(Run.backend == backend)
        if model:
            query = query.join(Run.model).where(
                (Model.name.contains(model, autoescape=True)) | (Model.id.startswith(model, autoescape=True))
                | (Model.synthetic == model)
            )
        if hardware:
            query = query.join(Run.hardware).where(Hardware.name.contains(hardware, autoescape=True)
                                                   | Hardware.id.startswith(hardware, autoescape=True))
        if tag:
            query = query.where(Run.tags.any(RunTag.tag == tag))
        if status:
            query = query.where(Run.status == status)
        if origin:
            query = query.where(Run.origin == origin)
        return query.limit(limit) if limit else query

    def get_run(self, ref: str) -> RunRecord:
        run_id = self.resolve(ref)
        with self._session() as session:
            return self._read(session, run_id)

    # -- whole records: bundles, imports, push/pull ------------------------

    def records(self, ids: Iterable[str]) -> list[RunRecord]:
        """Stored runs as records (no derived statistics), in the order given; a run that cannot be
        read as a record (a registry altered by hand) is a one-line error."""
        resolved = [self.resolve(ref) for ref in ids]  # before the session: SQLite allows one at a time
        out = []
        with self._session() as session:
            for run_id in resolved:
                out.append(self._read(session, run_id, f"{UNREADABLE_HINT}; nothing was copied"))
        return out

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        listed = list(ids)
        found: set[str] = set()
        with self._session() as session:
            for chunk in bulk.chunks(listed):
                found |= set(session.scalars(select(Run.id).where(Run.id.in_(chunk))))
        return found

    def add_records(self, records: Sequence[Mapping[str, Any]], source: str = "record",
                    known: Sequence[tuple[str, ...]] | None = None) -> tuple[list[str], list[str]]:
        """Store whole runs in one transaction: all of them or, on any error, none.

        Every record first passes :func:`pdx.registry.validate.check_records`, and
        each model must be the one the registry already knows under its sha256.
        A run already here is skipped (ids are unique, and imported runs' ids are
        content hashes), so adding the same records twice adds nothing: one found
        under any of its ``known`` ids (per record, its own first; by default
        :func:`pdx.registry.bundle.known_ids`, which adds the content ids an older
        pdx named it by) is skipped under the id it is stored by. Stored ids are never
        rewritten (other registries, pages and scripts name runs by them), so a run an
        older pdx stored keeps its older id. Returns (added ids, skipped ids).
        """

        unique = check_records(records, source)
        known_of = {id(r): ids for r, ids in zip(records, known)} if known is not None else {}
        ids_of = {id(r): known_of.get(id(r)) or known_ids(r) for r in unique}
        present = self.existing_ids(i for r in unique for i in ids_of[id(r)])
        stored = {id(r): next((i for i in ids_of[id(r)] if i in present), None) for r in unique}
        kept = {id(r) for r in unique}
        added: list[str] = []
        skipped: list[str] = [r["id"] for r in records if id(r) not in kept]  # identical copies
        try:
            with self._session() as session, session.begin():
                self._check_models(session, [r for r in unique if stored[id(r)] is None], source)
                for record in unique:
                    already = stored[id(record)]
                    if already is not None:
                        skipped.append(already)
                        continue
                    add_record(session, record, environment_id(record["environment"]))
                    added.append(record["id"])
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise RegistryError(f"nothing was stored in {self.display_url}: {reason}",
                                "adding runs is idempotent: run it again") from None
        return added, skipped

    @staticmethod
    def _check_models(session: Session, records: Sequence[Mapping[str, Any]], source: str) -> None:
        wanted = {r["model"]["sha256"]: (i, r) for i, r in enumerate(records)}
        for chunk in bulk.chunks(list(wanted)):
            for stored in session.scalars(select(Model).where(Model.id.in_(chunk))):
                index, record = wanted[stored.id]
                same_model(model_record(stored), record["model"], f"{source}: run {record['id']}")
