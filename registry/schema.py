"""The registry's tables, as SQLAlchemy 2 typed models.

Raw samples are the record; every statistic is derived from them when read.
The tables of the measurement levels (tests, samples, requests) are generated
from their record types in :mod:`pdx.contract.record`; the others are written
here. A change to either needs an Alembic migration in ``migrations/versions``
(a test compares this metadata with the migrated schema).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional, get_origin

from sqlalchemy import (JSON, BigInteger, Boolean, Column, DateTime, Float, ForeignKey, Integer, String, Table, Text,
                        UniqueConstraint)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeEngine

from pdx.contract import record


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Model(Base):
    __tablename__ = "models"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # sha256 of the content
    name: Mapped[str] = mapped_column(String(256))
    path: Mapped[str] = mapped_column(Text)  # where it was last seen
    format: Mapped[str] = mapped_column(String(16))
    architecture: Mapped[str] = mapped_column(String(64))
    n_params: Mapped[int] = mapped_column(BigInteger)
    dtype: Mapped[str] = mapped_column(String(32))
    n_layers: Mapped[int] = mapped_column(Integer)
    n_heads: Mapped[int] = mapped_column(Integer)
    n_kv_heads: Mapped[int] = mapped_column(Integer)
    head_dim: Mapped[int] = mapped_column(Integer)
    n_embd: Mapped[int] = mapped_column(Integer)
    n_ff: Mapped[int] = mapped_column(Integer)
    n_vocab: Mapped[int] = mapped_column(Integer)
    n_ctx_train: Mapped[int] = mapped_column(Integer)
    file_bytes: Mapped[int] = mapped_column(BigInteger)
    synthetic: Mapped[Optional[str]] = mapped_column(String(64))
    extra: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Hardware(Base):
    __tablename__ = "hardware"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(256))
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Environment(Base):
    __tablename__ = "environments"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(256))
    os: Mapped[str] = mapped_column(String(64))
    python: Mapped[str] = mapped_column(String(32))
    pdx_version: Mapped[str] = mapped_column(String(32))
    manifest: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    finished_at: Mapped[Optional[datetime]] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(16), index=True)
    backend: Mapped[str] = mapped_column(String(64), index=True)
    engine: Mapped[str] = mapped_column(String(64))
    engine_version: Mapped[Optional[str]] = mapped_column(String(64))
    engine_commit: Mapped[Optional[str]] = mapped_column(String(64))
    engine_settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    engine_details: Mapped[dict[str, Any]] = mapped_column(default=dict)
    threads: Mapped[Optional[int]] = mapped_column(Integer)
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    workload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    command: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[Optional[str]] = mapped_column(Text)
    parent_id: Mapped[Optional[str]] = mapped_column(String(32))  # the run this one repeats (pdx rerun)
    # "pdx" for runs pdx measured; else the tool an imported run came from ("llama-bench"...).
    origin: Mapped[str] = mapped_column(String(32), default="pdx", index=True)
    # Where a run came from beyond the manifest: an import's source file, a rerun's drift.
    provenance: Mapped[dict[str, Any]] = mapped_column(default=dict)
    pdx_version: Mapped[str] = mapped_column(String(32))
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id"), index=True)
    hardware_id: Mapped[str] = mapped_column(ForeignKey("hardware.id"), index=True)
    environment_id: Mapped[str] = mapped_column(ForeignKey("environments.id"))
    # The hardware figures the run's ceilings use and where they came from (pdx.measure.ceiling_sources.resolve).
    ceiling_basis: Mapped[Optional[dict[str, Any]]] = mapped_column()

    model: Mapped[Model] = relationship(lazy="joined")
    hardware: Mapped[Hardware] = relationship(lazy="joined")
    environment: Mapped[Environment] = relationship(lazy="joined")
    tags: Mapped[list["RunTag"]] = relationship(cascade="all, delete-orphan", lazy="selectin")
    tests: Mapped[list["TestResult"]] = relationship(
        cascade="all, delete-orphan", order_by="TestResult.ordinal", lazy="selectin"
    )


class RunLease(Base):
    """The process running an unfinished run (no part of its record): a run whose process is gone from
    its machine was killed, and the next pdx to open the registry there marks it interrupted
    (:mod:`pdx.registry.leases`). Removed when the run finishes."""

    __tablename__ = "run_leases"

    run_id: Mapped[str] = mapped_column(String(32), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    host: Mapped[str] = mapped_column(String(256))
    boot: Mapped[Optional[str]] = mapped_column(String(64))  # the kernel's boot id: another boot, another process
    pid_namespace: Mapped[Optional[str]] = mapped_column(String(64))  # pids are told apart only within one
    pid: Mapped[int] = mapped_column(Integer)
    started: Mapped[Optional[int]] = mapped_column(BigInteger)  # the process's start (clock ticks after boot)


class RunTag(Base):
    __tablename__ = "run_tags"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    tag: Mapped[str] = mapped_column(String(128), primary_key=True, index=True)


def record_columns(level: type) -> list[Column[Any]]:
    """The columns of a measurement level's table, one per field of its record type
    (:mod:`pdx.contract.record`), in its order; a list of records below it is a table of its own."""
    return [_column(level, field) for field in record.fields(level) if not field.is_level]


_PLAIN = {int: Integer, float: Float, bool: Boolean, str: Text}


def _stored(storage: record.Storage) -> BigInteger | DateTime | String:
    if storage.kind == "int64":
        return BigInteger()
    return DateTime(timezone=True) if storage.kind == "time" else String(storage.length)


def _column(level: type, field: record.Field) -> Column[Any]:
    default = None
    kind: TypeEngine[Any]
    if field.storage is not None:
        kind = _stored(field.storage)
    elif field.kind in _PLAIN:
        kind = _PLAIN[field.kind]()
    elif field.is_object or get_origin(field.kind) is list:
        kind = JSON()
        default = None if field.nullable else (list if get_origin(field.kind) is list else dict)
    else:
        raise TypeError(f"{level.__name__}.{field.name}: no column for a field of type {field.kind!r}")
    if not field.required and not field.nullable and default is None:
        raise TypeError(f"{level.__name__}.{field.name}: a field older records lack is Optional (their rows hold "
                        "NULL) unless it is an object or a list")
    return Column(field.name, kind, nullable=field.nullable, default=default, comment=field.doc)


# The generated tables' columns that code reads by name, declared for the type checker (mapped onto the
# table's columns, not added to them); a test holds each to its column's type and nullability. The rest
# are read through the field lists of pdx.registry.fields.
class TestResult(Base):
    __test__ = False  # not a pytest class
    id: Mapped[int]
    run_id: Mapped[str]
    ordinal: Mapped[int]
    name: Mapped[str]
    kind: Mapped[str]
    n_prompt: Mapped[int]
    n_gen: Mapped[int]
    depth: Mapped[int]
    batch: Mapped[int]
    status: Mapped[str]
    error: Mapped[Optional[str]]
    warmup: Mapped[int]
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    __table__ = Table(
        "tests", Base.metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("run_id", ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
        *record_columns(record.Test),
        UniqueConstraint("run_id", "ordinal"),
    )

    samples: Mapped[list["SampleRow"]] = relationship(
        cascade="all, delete-orphan", order_by="SampleRow.idx", lazy="selectin"
    )
    requests: Mapped[list["RequestRow"]] = relationship(
        cascade="all, delete-orphan", order_by="RequestRow.id", lazy="selectin"
    )


class SampleRow(Base):
    __table__ = Table(
        "samples", Base.metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("test_id", ForeignKey("tests.id", ondelete="CASCADE"), nullable=False, index=True),
        Column("idx", Integer, nullable=False),  # its place in the test: the record's list order
        *record_columns(record.Sample),
    )


class RequestRow(Base):
    """One request a serving test sent: raw times (ns) and counts, never a summary."""

    events: Mapped[list[Any]]
    __table__ = Table(
        "requests", Base.metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("test_id", ForeignKey("tests.id", ondelete="CASCADE"), nullable=False, index=True),
        *record_columns(record.Request),
    )
