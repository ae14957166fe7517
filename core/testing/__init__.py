"""pdx.testing: the backend contract suite, for the built-in backends and yours.

Subclass :class:`BackendContract` in a test module and name your backend,
or call the ``pdx_backend_contract`` fixture, or run ``pytest --pyargs
pdx.testing.suite --pdx-backend NAME``: the same checks the built-in
backends pass (docs/plugins.rst, "Testing a backend").
"""

import importlib

# Where each name lives; loaded on first use, so that pytest, which loads this package's plugin in every
# run wherever pdx is installed (entry point pytest11), loads none of pdx's engine or registry code.
_HOMES = {"BackendContract": "contract", "ContractWarning": "checks", "Harness": "target", "Params": "target",
          "Target": "target", "count_calls": "counters", "default_counter": "counters", "run_contract": "checks"}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'pdx.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pdx.testing.{_HOMES[name]}"), name)
