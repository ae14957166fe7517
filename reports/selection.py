"""Which runs a report or site shows: run ids, ``--where`` filters, or both."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from pdx.contract.errors import PdxError
from pdx.registry.where import describe as describe_where
from pdx.reports.results import read_runs, read_runs_of

if TYPE_CHECKING:
    from pdx.registry.store import RunFilters


def describe(refs: Sequence[str], where: RunFilters) -> str:
    shown = describe_where(where)
    return ", ".join(filter(None, ["run " + ", ".join(refs) if refs else "", shown]))


def select_runs(registry, refs: Sequence[str] = (), where: RunFilters | None = None) -> list[dict]:
    """The runs asked for, each with its samples, newest first; a one-line error if there are none."""
    where = where or {}
    if refs:
        ids = list(dict.fromkeys(registry.resolve(ref) for ref in refs))  # unknown ids fail here, by name
        runs = read_runs_of(registry, ids)
        if where:
            keep = set(registry.run_ids(**where))
            runs = [r for r in runs if r["id"] in keep]
    else:
        runs = read_runs(registry, samples=True, **where)
    left = getattr(registry, "unreadable", None)
    if not runs and left:
        raise PdxError(f"no run of registry {registry.display_url} that matches reads: {len(left)} could not be read "
                       f"({next(iter(left.values()))})", "the registry was altered or damaged: restore it from a copy")
    if not runs:
        shown = describe(refs, where)
        raise PdxError(f"no runs match {shown}" if shown else f"registry {registry.display_url} holds no runs",
                       "list what is stored with `pdx runs`")
    return sorted(runs, key=lambda r: r["created_at"] or "", reverse=True)
