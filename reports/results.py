"""The registry's runs as readers show them: each test with its derived statistics
(:mod:`pdx.domain.stats.derived`, re-exported here for the readers that import them from this module).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from typing_extensions import Unpack

from pdx.domain.stats.derived import derive_stats, serve_stats, with_stats

if TYPE_CHECKING:
    from pdx.registry.store import Registry, RunFilters

__all__ = ["derive_stats", "serve_stats", "with_stats", "read_runs", "read_run", "read_runs_of"]


def read_runs(registry: "Registry", samples: bool = False, **filters: Unpack[RunFilters]) -> list[dict]:
    """Runs of a registry as readers show them, newest first: each test with its statistics, its raw
    samples and request records only if asked; ``filters``: those of ``Registry.run_ids``."""
    return [with_stats(run, keep_samples=samples) for run in registry.runs(**filters)]


def read_run(registry: "Registry", ref: str) -> dict:
    """One run (an id or a unique prefix of one) with its statistics, samples kept."""
    return with_stats(registry.get_run(ref))


def read_runs_of(registry: "Registry", refs: Iterable[str]) -> list[dict]:
    return [read_run(registry, ref) for ref in refs]
