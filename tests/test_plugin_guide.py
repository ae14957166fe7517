"""docs/plugins.rst against the code: every hook documented as it is declared, every hook
tested, the guide's examples taken from the example plugin, the Backend contract covered.
(Its commands run in a fresh virtual environment: tests/test_plugin_venv.py.)"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from pathlib import Path

import pytest

from pdx.contract import backend as backend_module
from pdx.contract import hookspecs

from plugin_guide import EXAMPLE, GUIDE, code_blocks, commands, sections

HOOKS = {name: f for name, f in vars(hookspecs).items() if name.startswith("pdx_") and callable(f)}
GUIDE_TEXT = GUIDE.read_text()
HOOK_SECTIONS = {t: b for t, b in sections(sections(GUIDE_TEXT, "-")["Hooks"], "~").items()}
EXAMPLE_SOURCE = "\n".join(p.read_text() for p in sorted(EXAMPLE.rglob("*.py")))


def signature(hook) -> str:
    """``name(arg: Type) -> Type`` as a reader writes it (no string quotes from postponed annotations)."""
    return hook.__name__ + re.sub(r"['\"]", "", str(inspect.signature(hook)))


def test_the_hooks_are_what_the_guide_lists():
    assert HOOKS and set(HOOK_SECTIONS) == set(HOOKS)


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_every_hook_is_declared_and_documented_completely(name):
    hook = HOOKS[name]
    assert hasattr(hook, "pdx_spec"), f"{name} is not marked @hookspec"
    doc = inspect.getdoc(hook)
    params = inspect.signature(hook).parameters
    for param in params:
        assert f":param {param}:" in doc, f"{name}: no :param {param}:"
    assert ":return:" in doc and "Example::" in doc, f"{name}: say what it returns and show an example"
    version = re.search(r"\.\. versionadded:: (\S+)", doc)
    assert version, f"{name}: no versionadded"

    section = HOOK_SECTIONS[name]
    assert signature(hook) in code_blocks(section, "python")[0], f"the guide's signature of {name} differs"
    for param in params:
        assert f"``{param}``" in section.split(":Returns:")[0], f"the guide does not describe {name}'s {param}"
    for field in (":Returns:", ":Called:", "Example"):
        assert field in section, f"the guide's {name} has no {field}"
    assert f".. versionadded:: {version[1]}" in section


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_every_hook_example_is_the_example_plugins_code(name):
    in_spec = textwrap.dedent(inspect.getdoc(HOOKS[name]).split("Example::")[1].split(".. versionadded")[0]).strip()
    in_guide = code_blocks(HOOK_SECTIONS[name], "python")[1]
    assert in_spec == in_guide
    assert in_guide in EXAMPLE_SOURCE, f"the example of {name} is not the example plugin's code"


def test_every_hook_is_tested():
    tree = ast.parse((Path(__file__).parent / "test_plugin_hooks.py").read_text())
    tests = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    for name in HOOKS:
        assert any(t.startswith(f"test_hook_{name}") for t in tests), f"no test_hook_{name}* in test_plugin_hooks.py"


def test_the_guides_other_code_is_the_example_plugins_too():
    parts = sections(GUIDE_TEXT, "-")
    blocks = [b for title in ("Building on the openai backend", "Testing a backend")
              for b in code_blocks(parts[title], "python")]
    assert len(blocks) >= 2
    for block in blocks:
        assert block in EXAMPLE_SOURCE, f"not in docs/example-plugin:\n{block}"


def test_the_backend_contract_is_documented_name_by_name():
    contract = sections(GUIDE_TEXT, "-")["The Backend contract"]
    names = [n for n, v in vars(backend_module.Backend).items() if not n.startswith("_") or n == "__init__"]
    for cls in (backend_module.Sample, backend_module.EngineInfo, backend_module.Availability,
                backend_module.BackendConfig):
        names += [f.name for f in dataclasses.fields(cls)] + [cls.__name__]
    missing = [n for n in names if f"``{n}``" not in contract and f"``{n}(" not in contract]
    assert not missing, f"docs/plugins.rst does not describe {missing}"


def test_the_guide_names_the_environment_variables_and_commands():
    for needle in ("PDX_LOAD_PLUGINS", "PDX_DISABLE_PLUGINS", "pdx plugins", "warn_on_impl", "warn_on_impl_args",
                   "pytest11", "--backend openai --url"):
        assert needle in GUIDE_TEXT, needle
    assert commands()[0] == "pip install ./docs/example-plugin"
    assert all(re.match(r"(\w+=\S+ )*(pip|pdx|python) ", c) for c in commands()), commands()


def test_the_page_and_chart_types_load_from_their_first_import_paths_too():
    """A plugin written to pdx 0.1's guide imported SitePage and ChartSpec from pdx.reports.pageset and
    pdx.reports.chartset; they are the contract's types there still."""
    from pdx.contract.chart import ChartSpec
    from pdx.contract.page import SitePage
    from pdx.reports import chartset, pageset

    assert pageset.SitePage is SitePage and chartset.ChartSpec is ChartSpec
