"""Every hook, through the example plugin of docs/plugins.rst loaded in this process (its
installed form runs in tests/test_plugin_venv.py), and how hooks change without breaking
plugins: new hooks and arguments are ignored by old plugins, deprecated ones warn and work.
tests/test_plugin_guide.py checks that every hook has a test_hook_* here."""

from __future__ import annotations

import json
import sys
import types
from importlib.metadata import EntryPoint, distribution
from pathlib import Path

import pytest

from pdx.contract import hookspecs
from pdx.base import plugin_manager
from pdx.contract.hookspecs import PdxDeprecationWarning, hookspec

from conftest import run_pdx_here
from pdx.reports.results import read_runs

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "example-plugin"
HOOKS = [name for name in vars(hookspecs) if name.startswith("pdx_")]


@pytest.fixture(autouse=True)
def example_plugin(monkeypatch):
    """The example plugin's module, found through an entry point as if it were installed."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.delenv("PDX_EXAMPLE_SERVER", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no llama-server here, whatever the machine has
    real = plugin_manager.entry_points
    monkeypatch.setattr(plugin_manager, "entry_points",
                        lambda group: list(real(group=group)) + [EntryPoint("example", "pdx_example", "pdx")])
    plugin_manager.reset()
    yield
    plugin_manager.reset()
    for name in [m for m in sys.modules if m.startswith("pdx_example")]:
        monkeypatch.delitem(sys.modules, name)


def test_hook_pdx_register_backends_adds_a_backend_to_pdx_backends():
    rows = {r["name"]: r for r in json.loads(run_pdx_here("backends", "--json").stdout)}
    example = rows["example-llama-server"]
    assert example["engine"] == "llama.cpp" and not example["available"]
    assert example["reason"] == "no llama-server found" and "PDX_EXAMPLE_SERVER" in example["install"]
    assert "server" in example["options"] and "url" in example["options"]
    record = plugin_manager.plugin_state().record("example")
    assert record.loaded and record.backends == ["example-llama-server"]


def test_hook_pdx_register_commands_adds_a_command():
    result = run_pdx_here("example-server", "--server", "/nonexistent/llama-server")
    assert result.returncode == 2
    assert result.stderr == "pdx: error: /nonexistent/llama-server does not run (`--version` failed); put " \
                            "llama-server on PATH, set PDX_EXAMPLE_SERVER, or pass --example-server PATH\n"
    assert "example-server" in run_pdx_here("--help").stdout


def test_hook_pdx_bench_options_become_engine_options(tiny_gguf):
    assert "--example-server PATH" in run_pdx_here("bench", "--help").stdout
    assert "--example-server PATH" in run_pdx_here("serve-bench", "--help").stdout
    result = run_pdx_here("bench", "--backend", "example-llama-server", "--example-server", "/nonexistent/x",
                          "-m", str(tiny_gguf))
    # The option reached the backend as -o server=...: availability looked at that binary.
    assert result.returncode == 2 and "/nonexistent/x does not run" in result.stderr


def test_hook_pdx_report_templates_overrides_a_template_by_name(tmp_path):
    from pdx.reports import templating

    footer = templating.environment().get_template("_footer.html")
    assert "with the pdx-example plugin" in footer.render(site={"version": "0.1", "n_runs": 2}, page={"json": None})
    (tmp_path / "_footer.html").write_text("<footer>the user's own</footer>")
    mine = templating.environment(tmp_path).get_template("_footer.html")
    assert mine.render() == "<footer>the user's own</footer>"  # --templates still comes first


def test_hook_pdx_register_charts_adds_a_chart_to_reports_and_sites(tmp_path):
    import random

    from pdx.registry import Registry
    from pdx.reports.report.single_file import render_report
    from pdx.reports.site.builder import publish

    from runfactory import START, add_run, hardware, model

    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    add_run(registry, hardware("NVIDIA RTX 4090", 0), model("llama-8b", 1), "llamacpp-bench", START,
            random.Random(0))
    runs = read_runs(registry, samples=True)
    html = render_report(runs)
    assert "Every decode sample" in html and "Measured vs ceiling, per phase" in html
    assert html.index("Measured vs ceiling") < html.index("Every decode sample")  # pdx's own charts first
    publish(runs, tmp_path / "site")
    page = next((tmp_path / "site" / "hardware").glob("*.html")).read_text()
    assert "Every decode sample" in page and "<svg" in page


def test_hook_pdx_register_pages_adds_a_page_to_sites(tmp_path):
    """The example's page: built from the site's runs, linked from every page, beside pdx's own hub
    pages (registered through the same hook)."""
    from pdx.registry import Registry
    from pdx.reports.site.builder import publish

    from runfactory import fill

    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    fill(registry, 6, n_hardware=2, n_models=1)
    runs = read_runs(registry, samples=True)
    publish(runs, tmp_path / "site")
    page = (tmp_path / "site" / "backends.html").read_text()
    assert "Runs by backend" in page and "<td>llamacpp-bench</td><td class=\"num\">3</td>" in page
    assert json.loads((tmp_path / "site" / "backends.json").read_text())["backends"] == [
        {"backend": "llamacpp-bench", "runs": 3}, {"backend": "llamacpp-python", "runs": 3}]
    for other in ("index.html", f"runs/{runs[0]['id']}.html", "chips.html"):
        assert '<a href="' in (text := (tmp_path / "site" / other).read_text())
        assert "backends.html\">backends</a>" in text
    assert (tmp_path / "site" / "buy.html").exists()  # pdx's own page maker still ran


def test_a_broken_page_maker_costs_its_page_not_the_site(tmp_path, capsys):
    from pdx import hookimpl
    from pdx.registry import Registry
    from pdx.reports.site.builder import publish
    from pdx.reports.site.pageset import SitePage

    from runfactory import fill

    def escape(site):
        site.page("../index.html", "base.html", "x", {})

    class Broken:
        @hookimpl
        def pdx_register_pages(self, register):
            register(SitePage("fails", "fails", lambda site: 1 / 0))
            register(SitePage("escapes", "escapes", escape))
            register(SitePage("chips", "chips again", lambda site: None))

    plugin_manager.get_plugin_manager().register(Broken(), name="broken-pages")
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    fill(registry, 2, n_hardware=1, n_models=1)
    publish(read_runs(registry, samples=True), tmp_path / "site")
    err = capsys.readouterr().err
    assert "plugin broken-pages: page fails failed (ZeroDivisionError" in err
    assert "page escapes may write escapes.html and escapes/*.html, not '../index.html'" in err
    assert "plugin broken-pages: a page named chips is already on the site" in err
    assert (tmp_path / "site" / "index.html").exists() and (tmp_path / "site" / "backends.html").exists()


def test_a_broken_chart_maker_costs_its_chart_not_the_page(capsys):
    import random

    from pdx import hookimpl
    from pdx.registry import Registry
    from pdx.reports.report.single_file import render_report

    from runfactory import START, add_run, hardware, model

    class Broken:
        @hookimpl
        def pdx_register_charts(self, register):
            register(lambda view: 1 / 0)
            register(lambda view: {"name": "Not A Slug!", "title": "x", "note": "", "vega_lite": {}})

    plugin_manager.get_plugin_manager().register(Broken(), name="broken-charts")
    registry = Registry("sqlite://")
    add_run(registry, hardware("NVIDIA RTX 4090", 0), model("llama-8b", 1), "llamacpp-bench", START,
            random.Random(0))
    html = render_report(read_runs(registry, samples=True))
    assert "Measured vs ceiling" in html and "Every decode sample" in html
    err = capsys.readouterr().err
    assert "plugin broken-charts: a chart maker failed (ZeroDivisionError" in err
    assert "'Not A Slug!' is not a slug" in err


def test_an_override_extends_the_template_it_replaces(tmp_path):
    import random

    from pdx.registry import Registry
    from pdx.reports.report.single_file import render_report

    from runfactory import START, add_run, hardware, model

    (tmp_path / "report.html").write_text('{% extends "default:report.html" %}{% block main %}'
                                          '<p class="ours">our note</p>{{ super() }}{% endblock %}')
    registry = Registry("sqlite://")
    add_run(registry, hardware("NVIDIA RTX 4090", 0), model("llama-8b", 1), "llamacpp-bench", START,
            random.Random(0))
    runs = read_runs(registry, samples=True)
    plain, extended = render_report(runs), render_report(runs, templates=tmp_path)
    assert '<p class="ours">our note</p>' in extended and "Measured vs ceiling" in extended
    assert extended.replace('<p class="ours">our note</p>', "") == plain  # everything else is pdx's own page


def test_hook_pdx_register_importers_adds_a_format_to_pdx_import(tmp_path):
    timings = [{"prompt_n": 16, "prompt_ms": 8.0, "predicted_n": 4, "predicted_ms": 20.0, "cache_n": 0}] * 3
    path = tmp_path / "timings.json"
    path.write_text(json.dumps(timings))
    url = f"sqlite:///{tmp_path / 'registry.sqlite'}"
    done = json.loads(run_pdx_here("import", str(path), "--registry", url, "--json").stdout)
    assert done["format"] == "llama-server-timings" and len(done["added"]) == 1
    listed = run_pdx_here("import", "--help").stdout.split("Formats (--format):", 1)[1]
    assert "llama-server-timings" in listed and "[plugin example]" in listed
    run = json.loads(run_pdx_here("show", done["added"][0], "--registry", url, "--json").stdout)
    (test,) = run["tests"]
    assert run["origin"] == "llama-server-timings" and test["name"] == "pp16+tg4" and len(test["samples"]) == 3
    assert test["stats"]["prompt_rate"]["mean"] == 2000.0 and test["stats"]["gen_rate"]["mean"] == 200.0
    record = plugin_manager.plugin_state().record("example")
    assert record.loaded and "pdx_register_importers" in record.hooks
    # Its one-line errors are pdx's: a damaged field stores nothing.
    path.write_text(json.dumps([timings[0] | {"prompt_ms": -1}]))
    bad = run_pdx_here("import", str(path), "--registry", url, "--format", "llama-server-timings")
    assert bad.returncode == 2 and "timing 0: prompt_ms is -1" in bad.stderr and "Traceback" not in bad.stderr


def test_an_importer_that_raises_is_one_line_and_stores_nothing(tmp_path, monkeypatch):
    import pdx_example.timings as timings

    def broken(path, text, document, hardware):
        raise KeyError("oops")

    monkeypatch.setattr(timings, "IMPORTER", timings.IMPORTER.__class__("llama-server-timings", "broken", broken,
                                                                        timings.looks_like))
    path = tmp_path / "timings.json"
    path.write_text(json.dumps([{"prompt_n": 1, "prompt_ms": 1, "predicted_n": 1, "predicted_ms": 1}]))
    url = f"sqlite:///{tmp_path / 'registry.sqlite'}"
    result = run_pdx_here("import", str(path), "--registry", url)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "the llama-server-timings importer (plugin example) failed: KeyError" in result.stderr
    assert json.loads(run_pdx_here("runs", "--registry", url, "--json").stdout) == []


def _specs(**extra) -> types.ModuleType:
    """pdx's hookspecs as a later release might have them: plus ``extra``."""
    module = types.ModuleType("later_hookspecs")
    for name in HOOKS:
        setattr(module, name, getattr(hookspecs, name))
    for name, spec in extra.items():
        setattr(module, name, spec)
    return module


def _example_entry_point() -> EntryPoint:
    return EntryPoint("example", "pdx_example", "pdx")


def test_a_new_hook_and_a_new_argument_break_no_plugin():
    def pdx_register_backends(register, config):
        """A later release passes a config too."""

    def pdx_register_probes(register):
        """A hook the example plugin has never heard of."""

    later = _specs(pdx_register_backends=hookspec(pdx_register_backends),
                   pdx_register_probes=hookspec(pdx_register_probes))
    state = plugin_manager.load_plugins(later, [_example_entry_point()])
    (record,) = state.records
    assert record.loaded and record.warnings == []
    found = []
    state.manager.hook.pdx_register_backends(register=found.append, config={"new": True})
    assert [b.name for b in found] == ["example-llama-server"]
    assert state.manager.hook.pdx_register_probes(register=found.append) == []


def test_a_deprecated_hook_or_argument_warns_and_still_works(monkeypatch):
    def pdx_register_commands(cli):
        """Deprecated: implementing it warns."""

    def pdx_bench_options(legacy):
        """Its argument is deprecated."""

    old_hook = PdxDeprecationWarning("pdx_register_commands is deprecated since 0.9: implement pdx_add_commands")
    old_arg = PdxDeprecationWarning("the legacy argument of pdx_bench_options is deprecated since 0.9")
    later = _specs(pdx_register_commands=hookspec(warn_on_impl=old_hook)(pdx_register_commands),
                   pdx_bench_options=hookspec(warn_on_impl_args={"legacy": old_arg})(pdx_bench_options))
    module = types.ModuleType("pdx_test_legacy")
    module.pdx_bench_options = lambda legacy: []
    monkeypatch.setitem(sys.modules, "pdx_test_legacy", module)
    state = plugin_manager.load_plugins(later, [_example_entry_point(), EntryPoint("legacy", "pdx_test_legacy", "pdx")])
    example, legacy = state.records
    assert example.loaded and example.warnings == [f"PdxDeprecationWarning: {old_hook}"]
    assert legacy.loaded and legacy.warnings == [f"PdxDeprecationWarning: {old_arg}"]
    assert [] in state.manager.hook.pdx_bench_options(legacy=None)  # still called, for this release

    # The user sees it in `pdx plugins` and `pdx backends`; pdx.testing reports it (tests/test_testing_kit.py).
    monkeypatch.setattr(plugin_manager, "hookspecs", later)
    monkeypatch.setattr(plugin_manager, "entry_points", lambda group: [_example_entry_point()])
    plugin_manager.reset()
    assert f"warning: PdxDeprecationWarning: {old_hook}" in run_pdx_here("plugins").stdout
    assert f"plugin example: PdxDeprecationWarning: {old_hook}" in run_pdx_here("backends").stderr


def test_a_deprecation_warning_is_reported_by_the_contract_suite(monkeypatch, tmp_path):
    from pdx.testing import ContractWarning, Harness, Params, Target, checks

    from sleep_backend import SleepBackend

    def pdx_register_backends(register):
        """Deprecated."""

    warning = PdxDeprecationWarning("pdx_register_backends is deprecated since 0.9")
    later = _specs(pdx_register_backends=hookspec(warn_on_impl=warning)(pdx_register_backends))
    module = types.ModuleType("pdx_test_sleep")
    module.pdx_register_backends = lambda register: register(SleepBackend)
    monkeypatch.setitem(sys.modules, "pdx_test_sleep", module)
    entry = EntryPoint("sleepy", "pdx_test_sleep", "pdx")
    vars(entry).update(dist=distribution("pdx"))  # as importlib.metadata sets it for an installed plugin
    monkeypatch.setattr(plugin_manager, "hookspecs", later)
    monkeypatch.setattr(plugin_manager, "entry_points", lambda group: [entry])
    plugin_manager.reset()
    harness = Harness(Target("sleep"), Params(), tmp_path)
    with pytest.warns(ContractWarning, match="plugin sleepy: PdxDeprecationWarning: pdx_register_backends is "
                      "deprecated"):
        checks.check_manifest(harness)
    harness.close()


def test_hook_pdx_register_quantizers_makes_a_type_for_model_synth(tmp_path, monkeypatch):
    """The example registers ik_llama.cpp's types. That fork's llama-quantize cannot exist here: a
    script stands in for it (it copies pdx's f16 and records its arguments)."""
    out = tmp_path / "tiny-iq4ks.gguf"
    missing = run_pdx_here("model", "synth", "--shape", "tiny", "--type", "iq4_ks", "-o", str(out))
    assert missing.returncode == 2 and not out.exists() and list(tmp_path.iterdir()) == []
    assert missing.stderr == "pdx: error: no quantiser for IQ4_KS; set PDX_EXAMPLE_QUANTIZE to ik_llama.cpp's " \
                             "llama-quantize\n"
    tool = tmp_path / "bin" / "llama-quantize"
    tool.parent.mkdir()
    tool.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\ncp "$1" "$2"\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PDX_EXAMPLE_QUANTIZE", str(tool))
    made = run_pdx_here("model", "synth", "--shape", "tiny", "--type", "iq4_ks", "-o", str(out))
    assert made.returncode == 0, made.stderr
    source, dest, qtype = (tmp_path / "args").read_text().split()
    assert qtype == "IQ4_KS" and not Path(source).exists() and not Path(dest).exists()  # both beside it, gone
    assert Path(dest).parent == out.parent and out.read_bytes()[:4] == b"GGUF"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["args", "bin", out.name]
    tool.write_text("#!/bin/sh\necho 'unknown type' >&2\nexit 3\n")  # a tool that fails leaves no file
    failed = run_pdx_here("model", "synth", "--shape", "tiny", "--type", "iq5_ks", "-o", str(tmp_path / "x.gguf"))
    assert failed.returncode == 2 and "IQ5_KS failed (exit 3): unknown type" in failed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["args", "bin", out.name]
    unknown = run_pdx_here("model", "synth", "--shape", "tiny", "--type", "iq9_x", "-o", str(out))
    assert unknown.returncode == 2 and "iq4_ks" in unknown.stderr and "q4_k_m" in unknown.stderr
    record = plugin_manager.plugin_state().record("example")
    assert "pdx_register_quantizers" in record.hooks


def test_a_quantizer_that_raises_is_one_line_and_leaves_no_file(tmp_path, monkeypatch):
    import pdx_example.quantize as quantize

    def broken(source, dest, qtype):
        Path(dest).write_bytes(b"half")
        raise KeyError("oops")

    monkeypatch.setattr(quantize, "quantize", broken)
    result = run_pdx_here("model", "synth", "--shape", "tiny", "--type", "iq4_ks", "-o", str(tmp_path / "x.gguf"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "quantizer ik-llama-quantize (plugin example) failed: KeyError: 'oops'" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_hook_pdx_register_engine_builders_gives_pdx_bench_its_engine_versions(tmp_path, monkeypatch):
    """The example finds llama-server builds by version under PDX_EXAMPLE_SERVERS. No server runs here
    (tests/test_engine_versions.py runs two versions of a real engine): pdx asks the plugin for each
    version in turn and says which it found, and the plugin's refusals reach the user as one line."""
    builder = plugin_manager.engine_builders()["example"]
    assert (builder.backend, builder.plugin, builder.commit) == ("example-llama-server", "example", None)
    args = ["bench", "--backend", "example-llama-server", "--engine-version", "b1,b2", "-p", "16", "-n", "0",
            "--registry", f"sqlite:///{tmp_path / 'r.sqlite'}"]
    unset = run_pdx_here(*args)
    assert unset.returncode == 2 and unset.stderr.strip() == (
        "pdx: error: PDX_EXAMPLE_SERVERS is not set; set it to a folder of llama-server builds, one subfolder "
        "per version")
    (tmp_path / "servers" / "b1").mkdir(parents=True)
    (tmp_path / "servers" / "b1" / "llama-server").write_text("")
    monkeypatch.setenv("PDX_EXAMPLE_SERVERS", str(tmp_path / "servers"))
    half = run_pdx_here(*args)
    assert half.returncode == 2 and "b1: llama-server b1 (cached)" in half.stderr
    assert f"no llama-server for version b2 in {tmp_path / 'servers'}" in half.stderr.splitlines()[-1]
    bisect = run_pdx_here("bisect", "--engine", "example", "--source", str(tmp_path), "--good", "a", "--bad", "b")
    assert bisect.returncode == 2
    assert "'example' cannot be built from a commit; engines that can: llamacpp" in bisect.stderr
    assert "pdx_register_engine_builders" in plugin_manager.plugin_state().record("example").hooks


def test_hook_pdx_register_meters_adds_a_meter_to_pdx_hw_and_bench(tmp_path, monkeypatch):
    """The example's wall-plug meter: named by `pdx hw` with why it is absent, then found and read
    (a whole run through it: tests/test_energy.py)."""
    from pdx.measure.energy.session import find

    monkeypatch.delenv("PDX_EXAMPLE_PLUG_FILE", raising=False)
    absent = run_pdx_here("hw", "--no-probe", "--json")
    assert json.loads(absent.stdout)["meters"]["missing"]["wall-plug"] == "PDX_EXAMPLE_PLUG_FILE is not set"
    counter = tmp_path / "plug.joules"
    counter.write_text("1234.5\n")
    monkeypatch.setenv("PDX_EXAMPLE_PLUG_FILE", str(counter))
    (plug,) = find(plugin_manager.meter_sources()).meters
    assert (plug.name, plug.covers, plug.read()) == ("plug", "machine", 1234.5)
    assert "plug: machine of the wall plug" in run_pdx_here("hw", "--no-probe").stdout
    record = plugin_manager.plugin_state().record("example")
    assert "pdx_register_meters" in record.hooks
