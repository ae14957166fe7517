"""The results registry: SQLite by default, any SQLAlchemy database by URL."""

from pdx.registry.store import Registry, RunStart

__all__ = ["Registry", "RunStart"]
