"""The plugin manager: built-ins load through the entry-point group, broken
plugins are reported and left out, allow and block lists are honoured."""

from importlib.metadata import EntryPoint

import pytest

from pdx import plugin_manager
from pdx.backend import Availability, Backend
from pdx.errors import PdxError


@pytest.fixture(autouse=True)
def fresh_manager():
    plugin_manager.reset()
    yield
    plugin_manager.reset()


class Dummy(Backend):
    name = "dummy"
    engine = "none"

    @classmethod
    def availability(cls, options=None):
        return Availability(True)

    def load(self, model):
        raise NotImplementedError

    def run(self, test, repetitions, warmup):
        raise NotImplementedError


class GoodPlugin:
    @staticmethod
    def pdx_register_backends(register):
        register(Dummy)


def _with_entry_points(monkeypatch, extra):
    real = plugin_manager.entry_points

    def fake(group):
        return list(real(group=group)) + extra

    monkeypatch.setattr(plugin_manager, "entry_points", fake)


def test_builtin_backends_register_through_the_entry_point_group():
    names = set(plugin_manager.backends())
    assert {"llamacpp", "llamacpp-bench", "llamacpp-python"} <= names
    record = next(r for r in plugin_manager.plugin_state().records if r.name == "llamacpp")
    assert record.loaded and record.distribution == "pdx"
    assert "pdx_register_backends" in record.hooks


def test_broken_plugins_are_reported_and_the_rest_still_load(monkeypatch):
    import sys
    import types

    misspelled = types.ModuleType("pdx_test_misspelled")
    misspelled.pdx_register_backendz = lambda register: None
    from pdx import hookimpl

    misspelled.pdx_register_backendz = hookimpl(misspelled.pdx_register_backendz)
    good = types.ModuleType("pdx_test_good")
    good.pdx_register_backends = hookimpl(GoodPlugin.pdx_register_backends)
    monkeypatch.setitem(sys.modules, "pdx_test_misspelled", misspelled)
    monkeypatch.setitem(sys.modules, "pdx_test_good", good)
    _with_entry_points(monkeypatch, [
        EntryPoint("broken-import", "pdx_test_no_such_module", "pdx"),
        EntryPoint("misspelled", "pdx_test_misspelled", "pdx"),
        EntryPoint("good", "pdx_test_good", "pdx"),
    ])
    records = {r.name: r for r in plugin_manager.plugin_state().records}
    assert not records["broken-import"].loaded and "import failed" in records["broken-import"].error
    assert not records["misspelled"].loaded and "pdx_register_backendz" in records["misspelled"].error
    assert records["good"].loaded
    assert "dummy" in plugin_manager.backends() and "llamacpp" in plugin_manager.backends()


def test_allow_and_block_lists(monkeypatch):
    monkeypatch.setenv("PDX_DISABLE_PLUGINS", "llamacpp")
    assert "llamacpp" not in plugin_manager.backends()
    plugin_manager.reset()
    monkeypatch.delenv("PDX_DISABLE_PLUGINS")
    monkeypatch.setenv("PDX_LOAD_PLUGINS", "someother")
    assert plugin_manager.backends() == {}
    with pytest.raises(PdxError, match="unknown backend"):
        plugin_manager.get_backend("llamacpp")


def test_registering_a_non_backend_is_an_error(monkeypatch):
    import sys
    import types

    from pdx import hookimpl

    bad = types.ModuleType("pdx_test_bad_register")
    bad.pdx_register_backends = hookimpl(lambda register: register(object))
    monkeypatch.setitem(sys.modules, "pdx_test_bad_register", bad)
    _with_entry_points(monkeypatch, [EntryPoint("bad", "pdx_test_bad_register", "pdx")])
    with pytest.raises(PdxError, match="not a pdx Backend"):
        plugin_manager.backends()


def test_unknown_engine_options_are_refused():
    with pytest.raises(PdxError, match="has no option 'bogus'"):
        from pdx.backend import BackendConfig

        Dummy(BackendConfig(options={"bogus": "1"}))
