"""The contract suite for a backend named on the command line, no test module needed::

    pytest --pyargs pdx.testing.suite --pdx-backend NAME [--pdx-model PATH] [--pdx-option KEY=VALUE ...]
"""

from __future__ import annotations

import pytest

from pdx.contract.backend import option_pairs
from pdx.testing.contract import BackendContract
from pdx.testing.target import Target


class TestBackendContract(BackendContract):
    @pytest.fixture(scope="class")
    @classmethod
    def pdx_target(cls, request) -> Target:
        config = request.config
        name = config.getoption("--pdx-backend")
        if not name:
            pytest.skip("name a backend: --pdx-backend NAME (and --pdx-model PATH, --pdx-option KEY=VALUE)")
        try:
            options = option_pairs(config.getoption("--pdx-option"))
        except ValueError as exc:
            raise pytest.UsageError(f"--pdx-option {exc}") from None
        return Target(name, config.getoption("--pdx-model"), options)
