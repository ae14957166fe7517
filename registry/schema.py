"""The registry's tables, as SQLAlchemy 2 typed models.

Raw samples are the record; every statistic is derived from them when read.
A change here needs an Alembic migration in ``migrations/versions`` (a test
compares this metadata with the migrated schema).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from sqlalchemy import JSON, BigInteger, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from pdx.numbers import TEST_NAME_MAX


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
    # The hardware figures the run's ceilings use and where they came from (pdx.ceilings.sources.resolve).
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


class TestResult(Base):
    __tablename__ = "tests"
    __table_args__ = (UniqueConstraint("run_id", "ordinal"),)
    __test__ = False  # not a pytest class

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    ordinal: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(TEST_NAME_MAX))
    kind: Mapped[str] = mapped_column(String(8))
    n_prompt: Mapped[int] = mapped_column(Integer)
    n_gen: Mapped[int] = mapped_column(Integer)
    depth: Mapped[int] = mapped_column(Integer)
    batch: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[Optional[str]] = mapped_column(Text)
    warmup: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    engine: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # Each phase's bounds, the binding ceiling and the fraction reached (pdx.ceilings.test_ceilings).
    ceilings: Mapped[Optional[dict[str, Any]]] = mapped_column()
    adaptive: Mapped[Optional[dict[str, Any]]] = mapped_column()  # an adaptive run's stop record
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)  # a serving scenario's parameters
    conditions: Mapped[Optional[dict[str, Any]]] = mapped_column()  # what the machine did meanwhile (pdx.conditions)
    energy: Mapped[Optional[dict[str, Any]]] = mapped_column()  # joules over the timed windows (pdx.energy)

    samples: Mapped[list["SampleRow"]] = relationship(
        cascade="all, delete-orphan", order_by="SampleRow.idx", lazy="selectin"
    )
    requests: Mapped[list["RequestRow"]] = relationship(
        cascade="all, delete-orphan", order_by="RequestRow.id", lazy="selectin"
    )


class SampleRow(Base):
    __tablename__ = "samples"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    test_id: Mapped[int] = mapped_column(ForeignKey("tests.id", ondelete="CASCADE"), index=True)
    idx: Mapped[int] = mapped_column(Integer)
    ns: Mapped[int] = mapped_column(BigInteger)
    n_prompt: Mapped[int] = mapped_column(Integer)
    n_gen: Mapped[int] = mapped_column(Integer)
    prompt_ns: Mapped[Optional[int]] = mapped_column(BigInteger)
    gen_ns: Mapped[Optional[int]] = mapped_column(BigInteger)
    engine: Mapped[dict[str, Any]] = mapped_column(default=dict)


class RequestRow(Base):
    """One request a serving test sent: raw times (ns) and counts, never a summary."""

    __tablename__ = "requests"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    test_id: Mapped[int] = mapped_column(ForeignKey("tests.id", ondelete="CASCADE"), index=True)
    sample_idx: Mapped[Optional[int]] = mapped_column(Integer)  # None: failed before it made a sample
    idx: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(32))
    n_prompt: Mapped[int] = mapped_column(Integer)
    max_tokens: Mapped[int] = mapped_column(Integer)
    n_gen: Mapped[int] = mapped_column(Integer)
    send_ns: Mapped[int] = mapped_column(BigInteger)  # from the start of its load run
    scheduled_ns: Mapped[Optional[int]] = mapped_column(BigInteger)  # when it was due (open loop), from the same start
    shard: Mapped[Optional[int]] = mapped_column(Integer)  # the client process that sent it (--clients N); None: one
    first_ns: Mapped[Optional[int]] = mapped_column(BigInteger)  # from send
    end_ns: Mapped[Optional[int]] = mapped_column(BigInteger)  # from send
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[Optional[str]] = mapped_column(Text)
    http_status: Mapped[Optional[int]] = mapped_column(Integer)
    finish_reason: Mapped[Optional[str]] = mapped_column(String(32))
    events: Mapped[list[Any]] = mapped_column(default=list)  # [arrival ns from send, tokens] per event
    usage: Mapped[dict[str, Any]] = mapped_column(default=dict)
    engine: Mapped[dict[str, Any]] = mapped_column(default=dict)
