"""The plugin manager: built on first use, never at import time.

Every plugin, built-in or third-party, is found through the ``pdx``
entry-point group. A plugin that fails to import or implements a hook that
does not exist is reported (``pdx plugins``) and left out; the others load.
``PDX_LOAD_PLUGINS`` (comma-separated names) loads only those;
``PDX_DISABLE_PLUGINS`` leaves those out.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points

import pluggy

from pdx import hookspecs
from pdx.backend import Backend
from pdx.errors import BackendUnavailable, PdxError

ENTRY_POINT_GROUP = "pdx"


@dataclass
class PluginRecord:
    name: str
    value: str
    distribution: str | None
    version: str | None
    loaded: bool
    error: str | None = None
    hooks: list[str] = field(default_factory=list)


@dataclass
class PluginState:
    manager: pluggy.PluginManager
    records: list[PluginRecord]


def _names(variable: str) -> set[str] | None:
    value = os.environ.get(variable)
    if value is None:
        return None
    return {n.strip() for n in value.split(",") if n.strip()}


def _load(pm: pluggy.PluginManager, ep: EntryPoint) -> PluginRecord:
    dist = getattr(ep, "dist", None)
    record = PluginRecord(
        name=ep.name,
        value=ep.value,
        distribution=dist.metadata["Name"] if dist else None,
        version=dist.version if dist else None,
        loaded=False,
    )
    try:
        plugin = ep.load()
    except Exception as exc:  # a broken plugin must not break pdx
        record.error = f"import failed: {type(exc).__name__}: {exc}"
        return record
    try:
        pm.register(plugin, name=ep.name)
        # Only this plugin can be pending: the ones before it passed.
        pm.check_pending()
    except Exception as exc:
        if pm.is_registered(plugin):
            pm.unregister(plugin)
        record.error = f"invalid: {exc}"
        return record
    record.loaded = True
    record.hooks = sorted(impl.name for impl in pm.get_hookcallers(plugin) or [])
    return record


@functools.lru_cache(maxsize=1)
def plugin_state() -> PluginState:
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    allow, block = _names("PDX_LOAD_PLUGINS"), _names("PDX_DISABLE_PLUGINS") or set()
    records = []
    seen: set[str] = set()
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name in seen or ep.name in block or (allow is not None and ep.name not in allow):
            continue
        seen.add(ep.name)
        records.append(_load(pm, ep))
    return PluginState(pm, records)


def get_plugin_manager() -> pluggy.PluginManager:
    return plugin_state().manager


def reset() -> None:
    """Forget the cached manager (tests, and after installing a plugin)."""
    plugin_state.cache_clear()
    backends.cache_clear()


@functools.lru_cache(maxsize=1)
def backends() -> dict[str, type[Backend]]:
    found: dict[str, type[Backend]] = {}

    def register(backend: type[Backend]) -> None:
        if not (isinstance(backend, type) and issubclass(backend, Backend)):
            raise PdxError(f"a plugin registered {backend!r}, which is not a pdx Backend subclass")
        found.setdefault(backend.name, backend)

    get_plugin_manager().hook.pdx_register_backends(register=register)
    return found


def get_backend(name: str) -> type[Backend]:
    available = backends()
    try:
        return available[name]
    except KeyError:
        names = ", ".join(sorted(available)) or "none installed"
        raise PdxError(f"unknown backend {name!r}", f"choose one of: {names} (see `pdx backends`)") from None


def require_available(name: str, options: dict[str, str] | None = None) -> type[Backend]:
    backend = get_backend(name)
    status = backend.availability(options)
    if not status.available:
        hint = f"install: {status.install}" if status.install else None
        raise BackendUnavailable(f"backend {name} is not available: {status.reason}", hint)
    return backend
