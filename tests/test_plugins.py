"""The plugin manager: built-ins load through the entry-point group, broken
plugins are reported and left out, allow and block lists are honoured."""

from importlib.metadata import EntryPoint

import pytest

from pdx.base import plugin_manager
from pdx.contract.backend import Availability, Backend
from pdx.contract.errors import PdxError


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
    assert {"llamacpp", "llamacpp-bench", "llamacpp-python", "openai", "vllm"} <= names
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


def _plugin(monkeypatch, name: str, **hooks) -> None:
    """A plugin module named ``name``, its functions ``hooks``, installed under an entry point of that name."""
    import sys
    import types

    module = types.ModuleType(f"pdx_test_{name}")
    for hook, function in hooks.items():
        setattr(module, hook, function)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    _with_entry_points(monkeypatch, [EntryPoint(name, module.__name__, "pdx")])


def _records():
    return {r.name: r for r in plugin_manager.plugin_state().records}


def test_registering_a_non_backend_fails_that_plugin_alone(monkeypatch):
    _plugin(monkeypatch, "bad", pdx_register_backends=lambda register: register(object))
    backends = plugin_manager.backends()
    assert "llamacpp" in backends
    record = _records()["bad"]
    assert record.status == "failed" and "not a pdx Backend subclass" in record.error
    assert "pdx_register_backends failed" in record.error


def test_a_half_written_backend_class_is_refused_by_name(monkeypatch):
    class Half(Backend):
        name = "half"
        engine = "none"

    _plugin(monkeypatch, "half", pdx_register_backends=lambda register: register(Half))
    assert "half" not in plugin_manager.backends()
    assert "backend half does not implement availability, load, run" in _records()["half"].error


def test_a_hook_that_raises_fails_its_plugin_and_the_cli_still_works(monkeypatch):
    from conftest import run_pdx_here

    def broken(register):
        raise RuntimeError("engine import exploded")

    def bad_commands(cli):
        raise ImportError("no click today")

    _plugin(monkeypatch, "raiser", pdx_register_backends=broken, pdx_register_commands=bad_commands)
    result = run_pdx_here("backends")
    assert result.returncode == 0 and "llamacpp" in result.stdout
    assert "plugin raiser not loaded: pdx_register_commands failed: ImportError: no click today" in result.stderr
    assert _records()["raiser"].status == "failed"


def test_an_undecorated_misspelled_hook_is_caught_too(monkeypatch):
    _plugin(monkeypatch, "typo", pdx_register_backend=lambda register: None)
    record = _records()["typo"]
    assert record.status == "failed" and "pdx_register_backend" in record.error and "\n" not in record.error


def test_two_plugins_registering_one_name(monkeypatch):
    import sys
    import types

    class Copy(Dummy):
        engine = "copy"

    entries = []
    for name, cls in (("a-first", Dummy), ("b-second", Copy)):
        module = types.ModuleType(f"pdx_test_{name.replace('-', '_')}")
        module.pdx_register_backends = lambda register, cls=cls: register(cls)
        monkeypatch.setitem(sys.modules, module.__name__, module)
        entries.append(EntryPoint(name, module.__name__, "pdx"))
    _with_entry_points(monkeypatch, entries)
    assert plugin_manager.backends()["dummy"] is Dummy
    records = _records()
    assert records["a-first"].backends == ["dummy"] and records["b-second"].backends == []
    assert records["b-second"].warnings == ["backend dummy is already registered by plugin a-first; this one is left "
                                            "out"]


def test_a_bench_option_that_clashes_fails_its_plugin(monkeypatch):
    import click

    from conftest import run_pdx_here

    _plugin(monkeypatch, "clash", pdx_bench_options=lambda: [click.Option(["--threads", "-t"], default=None)])
    result = run_pdx_here("bench", "--help")
    assert result.returncode == 0 and "--threads" in result.stdout
    assert "option --threads clashes with" in _records()["clash"].error


def test_pdx_plugins_lists_every_plugin_and_what_became_of_it(monkeypatch):
    import json

    from conftest import run_pdx_here

    monkeypatch.setenv("PDX_DISABLE_PLUGINS", "vllm")
    _plugin(monkeypatch, "typo", pdx_register_backend=lambda register: None)
    text = run_pdx_here("plugins").stdout
    assert "llamacpp       loaded    pdx " in text and "backends: llamacpp, llamacpp-bench" in text
    assert "vllm           disabled" in text and "disabled by PDX_DISABLE_PLUGINS" in text
    assert "typo           failed" in text and "error: invalid: unknown hook 'pdx_register_backend'" in text
    plugin_manager.reset()
    rows = {r["name"]: r for r in json.loads(run_pdx_here("plugins", "--json").stdout)}
    assert rows["openai"] == {"name": "openai", "value": "pdx.plugins.openai", "distribution": "pdx",
                              "version": rows["llamacpp"]["version"], "status": "loaded", "error": None,
                              "disabled_by": None, "hooks": ["pdx_register_backends"], "backends": ["openai"],
                              "warnings": []}


def test_unknown_engine_options_are_refused():
    with pytest.raises(PdxError, match="has no option 'bogus'"):
        from pdx.contract.backend import BackendConfig

        Dummy(BackendConfig(options={"bogus": "1"}))
