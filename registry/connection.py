"""Opening a registry database from a URL or a path."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from pdx.contract.errors import RegistryError
from pdx.base.files import kind
from pdx.base.paths import data_dir

_HINT = "check --registry or PDX_REGISTRY (a SQLAlchemy URL such as sqlite:///runs.sqlite or a file path)"


def resolve_url(value: str | None = None) -> str:
    """``--registry`` beats ``PDX_REGISTRY`` beats the default file; a bare path means SQLite."""
    value = value or os.environ.get("PDX_REGISTRY") or str(data_dir() / "registry.sqlite")
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).expanduser().resolve()}"


def display_url(url: str) -> str:
    """The URL with any password masked, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        return url


def _sqlite_engine(url, create: bool) -> Engine:
    if url.database and url.database != ":memory:":
        path = Path(url.database)
        if not path.parent.is_dir():
            raise RegistryError(f"cannot open registry {url}: folder {path.parent} does not exist", _HINT)
        if not create and not path.is_file():
            raise RegistryError(f"no registry at {url}: {path} does not exist",
                                "check the path (this command reads an existing registry)")
        try:
            mode = path.stat().st_mode
        except OSError:
            mode = None  # a new file (or none SQLite can make: its own error says so)
        if mode is not None and not stat.S_ISREG(mode):  # SQLite would write its pages onto a disk device
            raise RegistryError(f"cannot open registry {url}: {path} is {kind(mode)}, not a file", _HINT)
    engine = create_engine(url, connect_args={"timeout": 60})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:
        # pysqlite's own transaction handling defers BEGIN; take it over so
        # writers queue on BEGIN IMMEDIATE instead of failing mid-transaction.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA busy_timeout = 60000")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def create(url_text: str, create: bool = True) -> Engine:
    """An engine that has answered a first query; any failure is a one-line RegistryError. With
    ``create`` false, a SQLite file that does not exist is refused instead of made."""
    shown = display_url(url_text)
    try:
        url = make_url(url_text)
        if url.get_backend_name() == "sqlite":
            engine = _sqlite_engine(url, create)
        else:
            args = {"connect_timeout": 10} if url.get_backend_name() == "postgresql" else {}
            engine = create_engine(url, pool_pre_ping=True, connect_args=args)
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except RegistryError:
        raise
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:  # ValueError: a port such as "notaport"
        raise RegistryError(f"cannot use registry URL {shown}: {exc}", _HINT) from None
    except ModuleNotFoundError as exc:
        raise RegistryError(f"cannot open registry {shown}: driver {exc.name} is not installed", _HINT) from None
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise RegistryError(f"cannot open registry {shown}: {reason}", _HINT) from None
    return engine
