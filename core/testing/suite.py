"""The contract suite for a backend named on the command line, no test module needed::

    pytest --pyargs pdx.testing.suite --pdx-backend NAME [--pdx-model PATH] [--pdx-option KEY=VALUE ...]
"""

from __future__ import annotations

import pytest

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
        options = {}
        for item in config.getoption("--pdx-option"):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise pytest.UsageError(f"--pdx-option {item!r} is not KEY=VALUE")
            options[key.strip()] = value.strip()
        return Target(name, config.getoption("--pdx-model"), options)
