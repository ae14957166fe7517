"""Schema migrations: every registry is brought to the newest schema when opened.

A blank database is built by running every migration (so the migrations are
what gets tested, not a shortcut); a SQLite file with data is copied aside
before it is upgraded. Concurrent openers are serialised: a file lock for
SQLite, an advisory lock for PostgreSQL.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import functools
import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import SQLAlchemyError

from pdx.registry.schema import Base

MIGRATIONS = Path(__file__).parent / "migrations"
_PG_LOCK_KEY = 0x706478  # "pdx"
_DECLARED = re.compile(r"^(down_revision|revision)\s*=\s*(.+?)\s*$", re.M)

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic (with Mako) is imported only where a registry is upgraded or its revision is unknown: opening
# an up-to-date registry needs one SELECT and the version files' text (see is_current).


def _config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config()).get_current_head()
    if head is None:  # None: no migration at all, which an installed pdx always has
        raise RuntimeError(f"no migrations in {MIGRATIONS}: the installed pdx is incomplete")
    return head


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


@functools.lru_cache(maxsize=1)
def declared_head() -> str | None:
    """The newest revision as the version files declare it, read as text (Alembic's loader imports
    every script): the one revision no other revises; None where the files make no single chain."""
    revisions: dict[str, set[str]] = {}
    for script in (MIGRATIONS / "versions").glob("*.py"):
        declared = {}
        for name, value in _DECLARED.findall(script.read_text()):
            try:
                declared[name] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                return None
        if "revision" not in declared:
            continue
        down = declared.get("down_revision")
        revisions[declared["revision"]] = set(down if isinstance(down, (tuple, list)) else [down] if down else [])
    heads = set(revisions) - set().union(*revisions.values())
    return heads.pop() if len(heads) == 1 else None


def is_current(engine: Engine) -> bool:
    """Whether the registry is at this pdx's newest revision, by one SELECT of its version table."""
    head = declared_head()
    if head is None:
        return False
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).fetchall()
    except SQLAlchemyError:  # no version table yet: a blank database
        return False
    return [tuple(row) for row in rows] == [(head,)]


@contextlib.contextmanager
def _sqlite_lock(path: Path) -> Iterator[None]:
    with open(path.with_name(path.name + ".lock"), "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _backup_sqlite(path: Path, revision: str) -> Path:
    target = path.with_name(f"{path.name}.{revision}.bak")
    with sqlite3.connect(path) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


class SchemaProblem(Exception):
    """A registry this pdx cannot bring to its schema (one made by a newer pdx, or damaged)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


RESTORE = ("restore it from a copy (pdx keeps one beside a SQLite registry, NAME.REVISION.bak, before each "
           "upgrade), or give another registry with --registry")


def _known(revision: str) -> bool:
    from alembic.script import ScriptDirectory

    try:
        return ScriptDirectory.from_config(_config()).get_revision(revision) is not None
    except Exception:  # alembic's ResolutionError/CommandError: no revision of that name here
        return False


def _refuse_newer(current: str | None) -> None:
    """A revision this pdx has no migration for is a newer pdx's schema: refused before anything is
    touched (no lock taken, no lock file made)."""
    if current is not None and not _known(current):
        raise SchemaProblem(f"its schema revision {current[:40]!r} is none this pdx knows (its newest is "
                            f"{head_revision()}): a newer pdx made or upgraded it",
                            "use that newer pdx (upgrade this one), or give another registry with --registry")


def _refuse_unversioned(conn: Connection, current: str | None) -> None:
    """A database with pdx's tables and no revision (its alembic_version table gone) is refused. Asked
    under the migration lock only: unlocked, "no revision" may be one that another process is
    committing at that moment, its tables visible a statement later."""
    if current is None and "runs" in inspect(conn).get_table_names():
        raise SchemaProblem("it holds pdx's tables but no schema revision (its alembic_version table is gone)",
                            RESTORE)


def check_tables(engine: Engine) -> None:
    """Every table of the schema is there (one dropped by hand fails every read that needs it)."""
    missing = sorted(set(Base.metadata.tables) - set(inspect(engine).get_table_names()))
    if missing:
        raise SchemaProblem(f"it is damaged: table{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                            f"{'are' if len(missing) > 1 else 'is'} missing", RESTORE)


def upgrade(engine: Engine) -> None:
    if is_current(engine):
        return
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    head = head_revision()
    current = current_revision(engine)
    if current == head:
        return
    _refuse_newer(current)
    sqlite_path = Path(engine.url.database) if engine.dialect.name == "sqlite" and engine.url.database else None
    lock = _sqlite_lock(sqlite_path) if sqlite_path else contextlib.nullcontext()
    with lock, engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        current = MigrationContext.configure(conn).get_current_revision()
        if current == head:
            return  # another process upgraded while we waited
        _refuse_newer(current)
        _refuse_unversioned(conn, current)
        if current is not None and sqlite_path is not None:
            _backup_sqlite(sqlite_path, current)
        config = _config()
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
