"""shared/DESIGN.md's layers, bottom up: each module imports only from its own layer and those below
(contract < base < domain < registry < measure < reports < api < cli), counting lazy imports inside
functions too (not those under ``if TYPE_CHECKING``: annotations only). No import points up. Each
layer is a folder, so a module's layer is its folder's. No two packages import each other, taken
whole or layer by layer, counting the imports under ``if TYPE_CHECKING`` too."""

from __future__ import annotations

import ast

import pytest

from test_architecture import MODULES, cycles, imports_of

LAYERS = ("contract", "base", "domain", "registry", "measure", "reports", "api", "cli")
# A module's layer is that of its longest prefix here: the folders. "pdx" itself is its __init__ (the
# version and the hookimpl marker) only. base, below the domain, is what every layer uses and a plugin
# author does not need (paths, files, units, the plugin manager); the contract is what a plugin needs.
LAYER_OF = {
    "pdx": "contract", "pdx.contract": "contract",
    "pdx.base": "base",
    "pdx.domain": "domain",
    "pdx.registry": "registry",
    "pdx.measure": "measure", "pdx.plugins": "measure",
    "pdx.reports": "reports",
    "pdx.api": "api", "pdx.testing": "api",
    "pdx.cli": "cli", "pdx.__main__": "cli",
}


def layer_of(module: str) -> str:
    name = module
    while name not in LAYER_OF:
        name = name.rpartition(".")[0]
        if name == "pdx" and module != "pdx":
            raise KeyError(f"{module}: no layer (add it to LAYER_OF)")
    return LAYER_OF[name]


def upward(module: str, imported: set[str]) -> set[tuple[str, str]]:
    """The imports of ``module`` that point to a higher layer."""
    mine = LAYERS.index(layer_of(module))
    return {(module, target) for target in imported
            if not target.startswith(module + ".") and LAYERS.index(layer_of(target)) > mine}


def test_every_module_has_a_layer():
    for module in MODULES:
        assert layer_of(module) in LAYERS


def test_no_import_points_up_a_layer():
    found = set().union(*(upward(m, imports_of(m)) for m in MODULES))
    assert not found, "imports that point up a layer: " + ", ".join(
        sorted(f"{a} ({layer_of(a)}) imports {b} ({layer_of(b)})" for a, b in found))


def package_of(module: str, by_layer: bool = False) -> str:
    """A module's package (pdx.X, a plugin's pdx.plugins.X), and with ``by_layer`` its layer too: a
    package may hold modules of two layers, and each part must stand on its own."""
    parts = module.split(".")
    package = ".".join(parts[:3] if parts[:2] == ["pdx", "plugins"] else parts[:2])
    return f"{package} ({layer_of(module)})" if by_layer else package


@pytest.mark.parametrize("type_only", [False, True],
                         ids=["imports", "imports for types too"])
@pytest.mark.parametrize("by_layer", [False, True], ids=["packages", "packages layer by layer"])
def test_no_import_cycle_between_packages(by_layer, type_only):
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        mine = package_of(module, by_layer)
        graph.setdefault(mine, set()).update(
            package_of(t, by_layer) for t in imports_of(module, type_only=type_only)
            if package_of(t, by_layer) != mine and not t.startswith(module + "."))
    found = cycles(graph)
    assert not found, f"packages that import each other: {found}"


@pytest.mark.parametrize("planted, target", [
    ("from pdx.cli import main", "pdx.cli"),
    ("def later():\n    from pdx.reports.results import derive_stats", "pdx.reports.results"),  # lazy counts too
])
def test_a_planted_upward_import_is_found(planted, target):
    source = MODULES["pdx.registry.store"].read_text() + "\n\n" + planted + "\n"
    assert ("pdx.registry.store", target) in upward("pdx.registry.store", imports_of("pdx.registry.store", source))


def test_an_import_under_type_checking_is_no_import():
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pdx.api import run_bench\n"
    assert not upward("pdx.registry.store", imports_of("pdx.registry.store", source))


def test_the_hook_specifications_stand_on_the_contract_alone():
    """hookspecs names the types plugins hand over, annotations included: every one is the contract's."""
    import ast

    tree = ast.parse(MODULES["pdx.contract.hookspecs"].read_text())
    named = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    named |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    ours = {name for name in named if name.startswith("pdx.")}
    assert ours and {name: layer_of(name) for name in ours if layer_of(name) != "contract"} == {}


def test_the_contract_package_imports_nothing_of_pdx_but_its_errors():
    """pdx.contract is what plugins and pdx both stand on: it must not grow a dependency on either."""
    for module in (m for m in MODULES if m == "pdx.contract" or m.startswith("pdx.contract.")):
        assert {t for t in imports_of(module) if not t.startswith("pdx.contract")} <= {"pdx.contract.errors"}, module


# What each start of pdx loads, and so must keep light: every `pdx` command's (its help is the least one
# runs), and every pytest run's where pdx is installed (its pytest plugin is an entry point, pytest11).
STARTS = {
    "pdx --help": ("import runpy, sys\nsys.argv = ['pdx', '--help']\n"
                   "try:\n    runpy.run_module('pdx', run_name='__main__')\nexcept SystemExit:\n    pass"),
    "pytest": "import pdx.testing.pytest_plugin",
}


def loaded_by(code: str) -> set[str]:
    """pdx's modules that a fresh interpreter has loaded after ``code``."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(*sorted(sys.modules))"],
                          capture_output=True, text=True, timeout=120)
    return {m for m in done.stdout.split() if m in MODULES}


def function_imports(module: str, source: str | None = None) -> list[tuple[str, int, set[str]]]:
    """pdx's imports inside ``module``'s functions (in its file, or in ``source`` read as if it were
    its file): (function, line, the modules each loads)."""
    found, seen = [], set()
    tree = ast.parse(MODULES[module].read_text() if source is None else source)
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in seen:
                    seen.add(node.lineno)
                    loaded = imports_of(module, ast.unparse(node))
                    if loaded:
                        found.append((function.name, node.lineno, loaded))
    return found


def needless(module: str, starts: dict[str, set[str]], source: str | None = None) -> list[str]:
    """``module``'s function-local imports that keep nothing out of a start."""
    return [f"{module}:{line} in {function}() imports {', '.join(sorted(loaded))}"
            for function, line, loaded in function_imports(module, source)
            if not any(module in start and not loaded <= start for start in starts.values())]


def test_a_function_imports_pdx_s_modules_only_to_keep_them_off_a_start():
    """An import of pdx's own inside a function is there to keep what it loads out of a start (its
    module is loaded by `pdx --help` or by pytest's plugin, and the module it imports is not); every
    other one is at the top of its module, where a reader sees what the module needs. No import breaks
    a cycle: there are none (tests/test_architecture.py, modules; above, packages)."""
    starts = {name: loaded_by(code) for name, code in STARTS.items()}
    assert {"pdx.cli", "pdx.cli.bench", "pdx.registry.importers"} <= starts["pdx --help"]
    assert not {"pdx.api", "pdx.registry.store"} & starts["pdx --help"]
    assert "pdx.domain.stats.derived" not in set().union(*starts.values())
    planted = "def f():\n    from pdx.contract.errors import PdxError\n"
    assert needless("pdx.domain.stats.derived", starts, planted)  # loaded by no start: at the top
    assert needless("pdx.cli.bench", starts, planted)  # loaded by a start, and so is what it imports
    assert not needless("pdx.cli.bench", starts, "def f():\n    from pdx import api\n")  # keeps pdx.api off
    found = [line for module in MODULES for line in needless(module, starts)]
    assert not found, "hoist these to the top of their module:\n" + "\n".join(found)
