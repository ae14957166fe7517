"""The plugin manager: built on first use, never at import time.

Every plugin, built-in or third-party, is found through the ``pdx``
entry-point group. One plugin's mistakes stay its own: a plugin that fails
to import, implements a hook that does not exist, raises from a hook, or
registers something that is not a backend is reported by name (``pdx
plugins``, and a line on ``pdx backends``) and left out; the others load.
``PDX_LOAD_PLUGINS`` (comma-separated entry-point names) loads only those;
``PDX_DISABLE_PLUGINS`` leaves those out. Deprecation warnings a plugin
triggers (see :mod:`pdx.contract.hookspecs`) are kept on its record and shown.
"""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any, Callable, Iterable, Iterator, Sequence

import pluggy

from pdx.contract import hookspecs
from pdx.contract.backend import Backend
from pdx.contract.chart import check_maker
from pdx.contract.engine_build import check_builder
from pdx.contract.importer import check_importer
from pdx.contract.page import check_page
from pdx.contract.quantizer import check_quantizer
from pdx.contract.meter import check_source
from pdx.contract.errors import BackendUnavailable, PdxError

ENTRY_POINT_GROUP = "pdx"
HOOK_PREFIX = "pdx_"


@dataclass
class PluginRecord:
    """One entry point of the ``pdx`` group and what became of it."""

    name: str
    value: str
    distribution: str | None
    version: str | None
    status: str = "failed"  # loaded, failed, disabled
    error: str | None = None  # why it failed, one line
    disabled_by: str | None = None  # PDX_DISABLE_PLUGINS or PDX_LOAD_PLUGINS
    hooks: list[str] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # deprecations and clashes that did not stop it

    @property
    def loaded(self) -> bool:
        return self.status == "loaded"

    def fail(self, error: str) -> None:
        self.status, self.error = "failed", one_line(error)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class PluginState:
    manager: pluggy.PluginManager
    records: list[PluginRecord]

    def record(self, name: str) -> PluginRecord | None:
        return next((r for r in self.records if r.name == name), None)


class PdxPluginManager(pluggy.PluginManager):
    """A pluggy manager that also takes undecorated ``pdx_*`` functions as hook implementations
    (as pytest does for ``pytest_*``), so a misspelled hook is reported even without ``@hookimpl``."""

    def parse_hookimpl_opts(self, plugin: object, name: str):
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(HOOK_PREFIX) and not isinstance(plugin, type):
            if inspect.isroutine(inspect.getattr_static(plugin, name, None)):
                return {}
        return opts


def one_line(text: str) -> str:
    """pluggy's validation errors span lines; a record shows one."""
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def _names(variable: str) -> set[str] | None:
    value = os.environ.get(variable)
    if value is None:
        return None
    return {n.strip() for n in value.split(",") if n.strip()}


def _record(ep: EntryPoint) -> PluginRecord:
    dist = getattr(ep, "dist", None)
    return PluginRecord(name=ep.name, value=ep.value, distribution=dist.metadata["Name"] if dist else None,
                        version=dist.version if dist else None)


def _caught(caught: list[warnings.WarningMessage]) -> list[str]:
    return [one_line(f"{w.category.__name__}: {w.message}") for w in caught]


def _load(pm: pluggy.PluginManager, ep: EntryPoint, record: PluginRecord) -> None:
    try:
        plugin = ep.load()
    except Exception as exc:  # a broken plugin must not break pdx
        record.fail(f"import failed: {type(exc).__name__}: {exc}")
        return
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pm.register(plugin, name=ep.name)
            # Only this plugin can be pending: the ones before it passed.
            pm.check_pending()
    except Exception as exc:
        if pm.is_registered(plugin):
            pm.unregister(plugin)
        record.fail(f"invalid: {exc}")
        return
    record.status = "loaded"
    record.warnings += _caught(caught)
    record.hooks = sorted(impl.name for impl in pm.get_hookcallers(plugin) or [])


def load_plugins(specs: ModuleType | None = None, found: Iterable[EntryPoint] | None = None) -> PluginState:
    """Load every entry point of the group (or ``found``) against ``specs`` (default: :mod:`pdx.contract.hookspecs`);
    never raises for a plugin."""
    pm = PdxPluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(specs or hookspecs)
    allow, block = _names("PDX_LOAD_PLUGINS"), _names("PDX_DISABLE_PLUGINS") or set()
    records: list[PluginRecord] = []
    eps = entry_points(group=ENTRY_POINT_GROUP) if found is None else found
    for ep in sorted(eps, key=lambda e: e.name):
        record = _record(ep)
        records.append(record)
        if ep.name in block:
            record.status, record.disabled_by = "disabled", "PDX_DISABLE_PLUGINS"
        elif allow is not None and ep.name not in allow:
            record.status, record.disabled_by = "disabled", "PDX_LOAD_PLUGINS"
        elif other := next((r for r in records[:-1] if r.name == ep.name and r.loaded), None):
            record.fail(f"another distribution ({other.distribution}) already provides a plugin named {ep.name}")
        else:
            _load(pm, ep, record)
    return PluginState(pm, records)


@functools.lru_cache(maxsize=1)
def plugin_state() -> PluginState:
    return load_plugins()


def get_plugin_manager() -> pluggy.PluginManager:
    return plugin_state().manager


def reset() -> None:
    """Forget the cached manager (tests, and after installing a plugin)."""
    plugin_state.cache_clear()
    _forget_registered()


def _forget_registered() -> None:
    """Forget what plugins registered (each extension kind's cache), so it is asked again."""
    for cached in (backends, registered, extensions):
        cached.cache_clear()


def call_each(hook: str, state: PluginState | None = None, fresh: Callable[[], dict] | None = None,
              **kwargs: Any) -> Iterator[tuple[PluginRecord, Any, dict]]:
    """Call ``hook`` plugin by plugin, yielding (record, result, the arguments it got: ``kwargs`` plus
    a ``fresh()`` set per plugin); a plugin whose hook raises is marked failed, unregistered and
    skipped, and the others go on."""
    state = state or plugin_state()
    pm = state.manager
    for name, plugin in pm.list_name_plugin():
        record = state.record(name) or _registered(state, name, plugin)
        if not record.loaded or hook not in record.hooks:
            continue
        others = [p for p in pm.get_plugins() if p is not plugin]
        given = kwargs | (fresh() if fresh else {})
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (result,) = pm.subset_hook_caller(hook, remove_plugins=others)(**given) or [None]
        except Exception as exc:
            drop(record, f"{hook} failed: {type(exc).__name__}: {exc}", state)
            continue
        record.warnings += [w for w in _caught(caught) if w not in record.warnings]
        yield record, result, given


def _registered(state: PluginState, name: str, plugin: object) -> PluginRecord:
    """A record for a plugin registered in code (``get_plugin_manager().register(obj)``), not by entry point."""
    record = PluginRecord(name=name, value=type(plugin).__name__, distribution=None, version=None, status="loaded",
                          hooks=sorted(c.name for c in state.manager.get_hookcallers(plugin) or []))
    state.records.append(record)
    return record


def drop(record: PluginRecord, error: str, state: PluginState | None = None) -> None:
    """Take a loaded plugin out, for a mistake found when its hooks are called."""
    pm = (state or plugin_state()).manager
    plugin = pm.get_plugin(record.name)
    if plugin is not None:
        pm.unregister(plugin)
    record.fail(error)
    _forget_registered()  # what it registered before failing goes too


def _check_backend(backend: object) -> type[Backend]:
    if not (isinstance(backend, type) and issubclass(backend, Backend)):
        raise PdxError(f"it registered {backend!r}, which is not a pdx Backend subclass")
    missing = [a for a in ("name", "engine") if not isinstance(getattr(backend, a, None),
                                                               str) or not getattr(backend, a)]
    if missing:
        raise PdxError(f"backend class {backend.__name__} sets no {' or '.join(missing)}")
    if inspect.isabstract(backend):
        methods = ", ".join(sorted(backend.__abstractmethods__))
        raise PdxError(f"backend {backend.name} does not implement {methods}")
    return backend


@functools.lru_cache(maxsize=1)
def backends() -> dict[str, type[Backend]]:
    found: dict[str, type[Backend]] = {}
    state = plugin_state()
    for record in state.records:
        record.backends = []
    pairs = [(record, backend) for record, _, given in call_each(
        "pdx_register_backends", state, fresh=lambda: {"register": _Collector(_check_backend)})
        for backend in given["register"]]
    for record, backend in first_of_each_name(pairs, "backend", lambda b: b.name):
        found[backend.name] = backend
        record.backends.append(backend.name)
    return found


def first_of_each_name(pairs: Iterable[tuple[PluginRecord, Any]], noun: str,
                       name_of: Callable[[Any], str]) -> list[tuple[PluginRecord, Any]]:
    """The clash rule of every extension kind whose things have names: the first registered of a name
    is kept, a later one left out with a warning on the plugin that brought it."""
    owner: dict[str, str] = {}
    kept = []
    for record, thing in pairs:
        name = name_of(thing)
        if name in owner:
            clash = f"{noun} {name} is already registered by plugin {owner[name]}; this one is left out"
            record.warnings += [clash] if clash not in record.warnings else []
            continue
        owner[name] = record.name
        kept.append((record, thing))
    return kept


class _Collector(list):
    """The ``register`` callback given to one plugin: checks each thing as it comes."""

    def __init__(self, check: Callable[[Any], Any]):
        super().__init__()
        self.check = check

    # Keyword arguments a later pdx may add are accepted here, so a plugin written for it
    # still loads on this one.
    def __call__(self, thing: Any, **future: Any) -> None:
        self.append(self.check(thing))


@functools.lru_cache(maxsize=None)
def registered(hook: str, check: Callable[[Any], Any]) -> tuple[tuple[PluginRecord, Any], ...]:
    """What plugins register through a ``pdx_register_*(register)`` hook, as (plugin, thing) pairs:
    pdx's own plugins first, then the others in load order, so a third party adds to the built-ins
    rather than reordering them. ``check`` vets each thing as it is registered (raising PdxError);
    a plugin that registers something wrong is reported and all it registered is left out."""
    found: list[tuple[PluginRecord, Any]] = []
    state = plugin_state()
    for record, _, given in call_each(hook, state, fresh=lambda: {"register": _Collector(check)}):
        found += [(record, thing) for thing in given["register"]]
    return tuple(sorted(found, key=lambda pair: pair[0].distribution != "pdx"))


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


@dataclass(frozen=True, eq=False)
class ExtensionKind:
    """One kind of thing plugins register through a ``pdx_register_*(register)`` hook: ``check`` vets
    each as it comes (raising PdxError); with ``name_of``, the first of a name is kept and a later one
    left out with a warning on its plugin (:func:`first_of_each_name`), without, every one is kept."""

    hook: str
    check: Callable[[Any], Any]
    noun: str
    name_of: Callable[[Any], str] | None = None


IMPORTERS = ExtensionKind("pdx_register_importers", check_importer, "importer", lambda importer: importer.name)
QUANTIZERS = ExtensionKind("pdx_register_quantizers", check_quantizer, "quantizer")
METERS = ExtensionKind("pdx_register_meters", check_source, "meter source")
CHARTS = ExtensionKind("pdx_register_charts", check_maker, "chart maker")
PAGES = ExtensionKind("pdx_register_pages", check_page, "page")
BUILDERS = ExtensionKind("pdx_register_engine_builders", check_builder, "engine builder", lambda builder: builder.name)


@functools.lru_cache(maxsize=None)
def extensions(kind: ExtensionKind) -> tuple[tuple[PluginRecord, Any], ...]:
    """(plugin, thing) of every ``kind`` plugins register, pdx's own first, clashes left out; a thing
    with a ``plugin`` field names the plugin that registered it."""
    pairs: Sequence[tuple[PluginRecord, Any]] = registered(kind.hook, kind.check)
    if kind.name_of is not None:
        pairs = first_of_each_name(pairs, kind.noun, kind.name_of)
    return tuple((record, _stamped(thing, record.name)) for record, thing in pairs)


def _stamped(thing: Any, plugin: str) -> Any:
    named = is_dataclass(thing) and any(f.name == "plugin" for f in fields(thing))
    return replace(thing, plugin=plugin) if named else thing


def importers() -> dict:
    """Every format ``pdx import`` reads, by name, in detection order (``pdx_register_importers``)."""
    found = {importer.name: importer for _, importer in extensions(IMPORTERS)}
    return dict(sorted(found.items(), key=lambda item: (item[1].priority, item[0])))


def quantizers() -> tuple:
    """Every GGUF quantiser plugins register (``pdx_register_quantizers``), pdx's own first."""
    return tuple(quantizer for _, quantizer in extensions(QUANTIZERS))


def engine_builders() -> dict:
    """How to build each engine at a version, by its ``--engine`` name (``pdx_register_engine_builders``)."""
    return {builder.name: builder for _, builder in extensions(BUILDERS)}


def meter_sources() -> tuple:
    """Every energy meter source plugins register (``pdx_register_meters``), pdx's own first."""
    return tuple(source for _, source in extensions(METERS))
