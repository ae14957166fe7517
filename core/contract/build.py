"""One builder per level of a run record (:mod:`pdx.contract.record`): the runner, the importers and the
registry's reader make every run, test, sample and engine entry here, so each level's keys are written
once. A builder assembles; it converts nothing (a row read back from a registry altered by hand keeps
what it holds, for :func:`pdx.registry.records.damage` to name). A caller states what it knows; a field
it does not give gets its default here: ``None`` (an object ``{}``, a list ``[]``) for a field every
record has, and nothing at all for a field older records lack (``NotRequired``), so a record made
without it hashes as it did (its content id).

A field a level's type declares beyond the builder's own parameters (a figure added to
:class:`~pdx.contract.record.Sample` with its migration) is given by name (``**more``) and checked
against the declaration: a name the record does not declare is a ``TypeError`` naming it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence, cast, get_origin

from pdx.contract import record
from pdx.contract.model import Model


class Shape(Protocol):
    """What a test's builder reads of the test it ran (a :class:`~pdx.contract.test_spec.TestSpec`, a
    serving scenario, a stored row)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def n_prompt(self) -> int: ...
    @property
    def n_gen(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def batch(self) -> int: ...


def _default(field: record.Field) -> object:
    """A field's value where its builder was not told it: an empty object or list, else None."""
    if get_origin(field.kind) is list:
        return None if field.nullable else []
    return None if field.nullable or not field.is_object else {}


def _fill(level: type, given: dict[str, Any], more: Mapping[str, Any], every: bool = False) -> dict[str, Any]:
    """``given`` and ``more`` as a record of ``level``, in its order: every field it requires (its
    default where not given), every other field only where given (``every``: each, its default)."""
    declared = record.fields(level)
    unknown = sorted(set(more) - {f.name for f in declared})
    if unknown:
        raise TypeError(f"a {level.__name__.lower()} record has no field {unknown[0]!r} "
                        f"(see pdx.contract.record.{level.__name__})")
    values = given | dict(more)
    return {f.name: values[f.name] if f.name in values else _default(f)
            for f in declared if every or f.required or f.name in values}


def sample(ns: int, n_prompt: int = 0, n_gen: int = 0, prompt_ns: int | None = None, gen_ns: int | None = None,
           engine: dict[str, Any] | None = None, **more: Any) -> record.Sample:
    """One counted repetition as stored; ``more``: the figures the record declares beyond these."""
    given = {"ns": ns, "n_prompt": n_prompt, "n_gen": n_gen, "prompt_ns": prompt_ns, "gen_ns": gen_ns,
             "engine": {} if engine is None else engine}
    # Every sample field is stored in its column, so a sample gives each (None: not measured).
    return cast(record.Sample, _fill(record.Sample, given, more, every=True))


def test(shape: Shape, samples: Iterable[record.Sample], *, ordinal: int, started_at: str | None,
         finished_at: str | None = None, status: str = "ok", error: str | None = None, warmup: int = 0,
         engine: dict[str, Any] | None = None, **more: Any) -> record.Test:
    """One test of a run with its samples; ``finished_at`` defaults to ``started_at`` (a tool that kept
    one time); ``more``: its objects (ceilings, adaptive, spec, conditions, energy, requests...)."""
    given = {"ordinal": ordinal, "name": shape.name, "kind": shape.kind, "n_prompt": shape.n_prompt,
             "n_gen": shape.n_gen, "depth": shape.depth, "batch": shape.batch, "status": status, "error": error,
             "warmup": warmup, "started_at": started_at,
             "finished_at": started_at if finished_at is None else finished_at,
             "engine": {} if engine is None else engine,
             "samples": list(samples)}
    return cast(record.Test, _fill(record.Test, given, more))


def engine(name: str, version: str | None = None, commit: str | None = None,
           settings: dict[str, Any] | None = None, details: dict[str, Any] | None = None) -> record.Engine:
    """The engine a run measured, as its record names it."""
    return {"name": name, "version": version, "commit": commit, "settings": {} if settings is None else settings,
            "details": {} if details is None else details}


def run(*, backend: str, engine: record.Engine, model: Model, hardware: dict[str, Any],
        environment: dict[str, Any], pdx_version: str, created_at: str | None, tests: Sequence[record.Test] = (),
        status: str = "running", finished_at: str | None = None, threads: int | None = None,
        options: dict[str, Any] | None = None, workload: dict[str, Any] | None = None, command: str = "",
        error: str | None = None, parent_id: str | None = None, origin: str = "pdx",
        provenance: dict[str, Any] | None = None, tags: Iterable[str] = (),
        ceiling_basis: dict[str, Any] | None = None, id: str = "", **more: Any) -> record.Run:
    """A run record. ``id``: its id where it has one already (a run pdx measures names it before it
    starts; an import's is its content's hash, :func:`pdx.registry.bundle.content_id`, made from this)."""
    given = {"id": id, "status": status, "created_at": created_at, "finished_at": finished_at,
             "backend": backend, "engine": engine, "threads": threads, "options": {} if options is None else options,
             "workload": {} if workload is None else workload, "command": command, "error": error,
             "parent_id": parent_id, "pdx_version": pdx_version, "origin": origin,
             "provenance": {} if provenance is None else provenance, "tags": list(dict.fromkeys(tags)), "model": model,
             "hardware": hardware, "environment": environment, "ceiling_basis": ceiling_basis,
             "tests": list(tests)}
    return cast(record.Run, _fill(record.Run, given, more))
