"""Reading many runs at once, as plain rows instead of ORM objects.

Loading a run through the ORM builds an object per sample; a registry of
10,000 runs holds hundreds of thousands of samples, and building those
objects costs more than everything a report does with them. This reads each
table with one query per chunk of ids and hands back lightweight stand-ins
with the same attributes as the ORM objects (``run.tests[0].samples[0].ns``,
``run.model.name``, ``run.tags[0].tag``), so the one function that turns a
stored run into a dict serves both paths. A test's child tables are found
from the schema's relationships, so a new one is read without a change here.
"""

from __future__ import annotations

import json
from itertools import groupby
from operator import attrgetter
from types import SimpleNamespace
from typing import Any, Iterator, Sequence, TypeVar

from sqlalchemy import FromClause, Select, SQLColumnExpression, inspect, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from pdx.registry.schema import Base, Environment, Hardware, Model, Run, RunTag, TestResult

CHUNK = 500  # ids per IN clause: under every database's parameter limit

T = TypeVar("T")


def chunks(ids: Sequence[T]) -> Iterator[Sequence[T]]:
    for first in range(0, len(ids), CHUNK):
        yield ids[first:first + CHUNK]


def _rows(session: Session, table: FromClause, key: SQLColumnExpression[Any], ids: Sequence[object],
          order: Sequence[SQLColumnExpression[Any]] = ()) -> list[SimpleNamespace]:
    connection = session.connection()  # plain Core rows: no ORM bookkeeping per row
    out: list[SimpleNamespace] = []
    for chunk in chunks(ids):
        query = select(table).where(key.in_(chunk)).order_by(*order)
        out.extend(SimpleNamespace(**row._mapping) for row in connection.execute(query))
    return out


def _by(rows: list[SimpleNamespace], field: str) -> dict[Any, list[SimpleNamespace]]:  # by a column's value
    rows = sorted(rows, key=attrgetter(field))  # stable: each group keeps the query's order
    return {key: list(group) for key, group in groupby(rows, key=attrgetter(field))}


def _attach_children(session: Session, model: type[Base], parents: list[SimpleNamespace]) -> None:
    """Every one-to-many relationship of ``model`` (a test's samples, and any child table
    added later), read in bulk and set on each parent in the relationship's order."""
    ids = [p.id for p in parents]
    for rel in inspect(model).relationships:
        if rel.direction.name != "ONETOMANY":
            continue
        ((_, fk),) = rel.synchronize_pairs
        order = (fk, *(rel.order_by or ()))
        children = _by(_rows(session, rel.mapper.local_table, fk, ids, order), fk.name)
        for parent in parents:
            setattr(parent, rel.key, children.get(parent.id, []))


# What reading a row altered by hand raises: a date or JSON that does not parse, a table or a row
# that is gone, a value of another type.
READ_ERRORS = (SQLAlchemyError, ValueError, TypeError, KeyError, AttributeError, OverflowError)


def read_error(exc: BaseException) -> str:
    """One line saying why a stored run did not read."""
    if isinstance(exc, KeyError) or (isinstance(exc, AttributeError) and "'NoneType'" in str(exc)):
        return f"a row it refers to (its model, hardware or environment) is missing ({str(exc)[:80]})"
    if isinstance(exc, json.JSONDecodeError):
        return f"a JSON value in its rows does not parse ({exc.msg} at character {exc.pos})"
    if isinstance(exc, ValueError) and "isoformat" in str(exc):
        return f"a date in its rows does not parse ({str(exc)[:80]})"
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return (reason[0] if reason else type(exc).__name__)[:200]


def load_runs(session: Session, query: Select[Run], unreadable: dict[str, str] | None = None) -> list[SimpleNamespace]:
    """The runs ``query`` (a ``select(Run)`` with filters and order) selects, in its order. With
    ``unreadable`` (a dict), a run whose rows do not read (a registry altered by hand) is left out and
    put there (id: why), the others read one by one; without it, the error is raised."""
    try:
        return _load_runs(session, query)
    except READ_ERRORS:
        if unreadable is None:
            raise
    session.rollback()  # PostgreSQL takes no further statement in a failed transaction
    ids = list(dict.fromkeys(session.scalars(query.with_only_columns(Run.id))))
    out: list[SimpleNamespace] = []
    for run_id in ids:
        try:
            out.extend(_load_runs(session, select(Run).where(Run.id == run_id)))
        except READ_ERRORS as exc:
            session.rollback()
            unreadable[run_id] = read_error(exc)
    return out


def _load_runs(session: Session, query: Select[Run]) -> list[SimpleNamespace]:
    runs = [SimpleNamespace(**row._mapping)
            for row in session.execute(query.with_only_columns(*Run.__table__.columns))]
    if not runs:
        return []
    ids = list(dict.fromkeys(r.id for r in runs))
    runs = list({r.id: r for r in runs}.values())  # joins on tags may repeat a run
    shared = {
        "model": {m.id: m for m in _rows(session, Model.__table__, Model.id, list({r.model_id for r in runs}))},
        "hardware": {h.id: h for h in _rows(session, Hardware.__table__, Hardware.id,
                                            list({r.hardware_id for r in runs}))},
        "environment": {e.id: e for e in _rows(session, Environment.__table__, Environment.id,
                                               list({r.environment_id for r in runs}))},
    }
    tags = _by(_rows(session, RunTag.__table__, RunTag.run_id, ids), "run_id")
    columns = TestResult.__table__.c  # generated from the record type: no attributes mypy sees on the class
    tests = _rows(session, TestResult.__table__, columns.run_id, ids, (columns.run_id, columns.ordinal))
    _attach_children(session, TestResult, tests)
    tests_by_run = _by(tests, "run_id")
    for run in runs:
        run.model = shared["model"][run.model_id]
        run.hardware = shared["hardware"][run.hardware_id]
        run.environment = shared["environment"][run.environment_id]
        run.tags = tags.get(run.id, [])
        run.tests = tests_by_run.get(run.id, [])
    return runs
