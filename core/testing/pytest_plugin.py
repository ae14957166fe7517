"""pdx's pytest plugin (entry point ``pytest11``: loaded wherever pdx is installed).

It adds the ``pdx_backend_contract`` fixture (the whole contract in one
call) and the ``--pdx-backend`` / ``--pdx-model`` / ``--pdx-option`` options
read by the ready-made suite: ``pytest --pyargs pdx.testing.suite
--pdx-backend NAME``. Nothing of pdx's is imported until a fixture is used: pytest loads this
plugin in every run wherever pdx is installed.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pdx", "pdx backend contract (pdx.testing)")
    group.addoption("--pdx-backend", metavar="NAME", help="backend the pdx.testing.suite module checks")
    group.addoption("--pdx-model", metavar="PATH", help="its model (default: a tiny synthetic one, or a server's own)")
    group.addoption("--pdx-option", action="append", default=[], metavar="KEY=VALUE",
                    help="an engine option (-o), repeatable")


@pytest.fixture
def pdx_backend_contract(tmp_path_factory):
    """``pdx_backend_contract(backend, model=None, options=None, ...)`` runs every contract check on it."""
    from pdx.testing.checks import run_contract
    from pdx.testing.counters import default_counter
    from pdx.testing.target import Harness, Params, Target

    harnesses = []

    def check(backend, model=None, options=None, threads=1, params=Params(), work_counter=default_counter,
              model_dims=None):
        target = Target(backend, model, dict(options or {}), threads, model_dims=model_dims)
        harness = Harness(target, params, tmp_path_factory.mktemp("pdx-contract"), work_counter)
        harnesses.append(harness)
        run_contract(harness)

    yield check
    for harness in harnesses:
        harness.close()
