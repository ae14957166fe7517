"""pdx.testing: the backend contract suite, for the built-in backends and yours.

Subclass :class:`BackendContract` in a test module and name your backend,
or call the ``pdx_backend_contract`` fixture, or run ``pytest --pyargs
pdx.testing.suite --pdx-backend NAME``: the same checks the built-in
backends pass (docs/plugins.rst, "Testing a backend").
"""

from pdx.testing.checks import ContractWarning, run_contract
from pdx.testing.contract import BackendContract
from pdx.testing.counters import count_calls, default_counter
from pdx.testing.target import Harness, Params, Target

__all__ = ["BackendContract", "ContractWarning", "Harness", "Params", "Target", "count_calls", "default_counter",
           "run_contract"]
