"""The house rules of shared/DESIGN.md that the code itself can show: data flows one way, and the
package has no import cycle (lazy imports inside functions included: a cycle there is a layering
mistake that merely has not failed yet)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Source folder of each package (pyproject.toml's package-dir).
PACKAGES = {"pdx": ROOT / "core", "pdx.plugins": ROOT / "plugins", "pdx.registry": ROOT / "registry",
            "pdx.reports": ROOT / "reports"}


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in sorted(PACKAGES.items(), key=lambda item: -len(item[0])):  # the deepest first
        for path in folder.rglob("*.py"):
            parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
            name = ".".join([package, *parts])
            if ".migrations." not in f"{name}." and name not in found:
                found[name] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The module of ours that ``import name`` loads (a name inside a module counts as the module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, source: str | None = None, type_only: bool = False) -> set[str]:
    """Our modules that ``module`` imports anywhere in its body (its file's, or ``source`` read as
    if it were its file), except under ``if TYPE_CHECKING`` (with ``type_only``, those too)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if not type_only and isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                found.update(filter(None, (_owner(a.name) for a in child.names)))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package
                    for _ in range(child.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                found.update(filter(None, (_owner(f"{base}.{a.name}") or _owner(base) for a in child.names)))
            visit(child)

    visit(ast.parse(path.read_text() if source is None else source))
    return found - {module}


def test_the_module_list_is_the_package():
    assert {"pdx", "pdx.api", "pdx.registry.store", "pdx.reports.results",
            "pdx.plugins.llamacpp.server"} <= set(MODULES)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("pdx.registry")))
def test_the_registry_imports_no_reader_runner_or_display(module):
    """Records flow runner -> registry -> readers: the registry stores and returns records, and the
    statistics, displays and reports are derived from them by the readers (pdx.reports.results and up)."""
    banned = ("pdx.measure.runner", "pdx.reports.results", "pdx.domain.stats", "pdx.reports", "pdx.plugins", "pdx.cli",
              "pdx.api")
    bad = sorted(m for m in imports_of(module) if m.startswith(banned) or "display" in m)
    assert not bad, f"{module} imports {bad}"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.parametrize("type_only", [False, True], ids=["imports", "imports for types too"])
def test_no_import_cycle(type_only):
    """Not even through the imports under ``if TYPE_CHECKING``: two modules that name each other's types
    are one module, or want a protocol or a small module of types below both."""
    # A package's __init__ importing its own submodules is how packages are made, not a cycle.
    graph = {m: {t for t in imports_of(m, type_only=type_only) if not t.startswith(m + ".")} for m in MODULES}
    found = cycles(graph)
    assert not found, f"import cycles: {found}"


def test_an_import_for_types_only_counts_when_asked():
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pdx.api import run_bench\n"
    assert "pdx.api" not in imports_of("pdx.registry.store", source)
    assert "pdx.api" in imports_of("pdx.registry.store", source, type_only=True)


def test_a_planted_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
