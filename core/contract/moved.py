"""The import paths that pdx 0.1's plugin guide gave, kept for plugins written to it.

pdx's folders became its layers (contract, base, domain, registry, measure, reports, api, cli), so
modules a plugin imports moved: ``pdx.backend`` is :mod:`pdx.contract.backend`, and so on. An old
path loads the module at its new place, the very same module object, so a published plugin keeps
working (``isinstance`` and monkeypatching included); new code imports the new paths
(docs/plugins.rst).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

# old path -> where it is now; a parent of an old path is listed too (``import pdx.serving.generic``
# imports ``pdx.serving`` first).
MOVED: dict[str, str] = {
    "pdx.backend": "pdx.contract.backend",
    "pdx.errors": "pdx.contract.errors",
    "pdx.hookspecs": "pdx.contract.hookspecs",
    "pdx.importer": "pdx.registry.importers.kit",
    "pdx.energy": "pdx.domain.energy",
    "pdx.energy.meter": "pdx.contract.meter",
    "pdx.serving": "pdx.measure.serving",
    "pdx.serving.backend": "pdx.measure.serving.backend",
    "pdx.serving.generic": "pdx.measure.serving.generic",
    "pdx.serving.managed": "pdx.measure.serving.managed",
    "pdx.synth": "pdx.domain.synth",
    "pdx.synth.quantizers": "pdx.domain.synth.quantizers",
    "pdx.workload": "pdx.domain.workload",
}


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and hands back the module at its new one."""

    def __init__(self) -> None:
        self.own_specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED[spec.name])
        self.own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the old path's spec on the module: give it back its own.
        assert module.__spec__ is not None  # the import system gave it the old path's
        module.__spec__ = self.own_specs.pop(module.__spec__.name)


def install() -> None:
    if not any(isinstance(finder, MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
