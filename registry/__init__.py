"""The results registry: SQLite by default, any SQLAlchemy database by URL.

``Registry`` and ``RunStart`` are loaded on first use: the package's light modules (bundles, importers)
are imported by every start of pdx, and the store brings SQLAlchemy and Alembic with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pdx.registry.store import Registry, RunStart

__all__ = ["Registry", "RunStart"]


def __getattr__(name: str) -> type[Registry] | type[RunStart]:
    if name in __all__:
        from pdx.registry import store

        return {"Registry": store.Registry, "RunStart": store.RunStart}[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
