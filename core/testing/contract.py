"""``BackendContract``: the contract suite as a pytest class to subclass.

::

    from pdx.testing import BackendContract, Params

    class TestMyEngine(BackendContract):
        backend = "myengine"                 # the name your plugin registers
        model = "models/small.gguf"          # optional: else a tiny synthetic model
        options = {"n_batch": "256"}         # optional: -o KEY=VALUE
        params = Params(depth=256)           # optional: test sizes

The backend is loaded once per class. Override the ``pdx_target`` fixture
to build the target from other fixtures (a server's URL), and
``work_counter`` to count your engine's work (see :mod:`pdx.testing.counters`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

import pytest

from pdx.contract.backend import Backend
from pdx.testing import checks
from pdx.testing.counters import WorkCounter, default_counter
from pdx.testing.target import Harness, Params, Target


class BackendContract:
    backend: ClassVar[str | type[Backend] | None] = None
    model: ClassVar[str | None] = None
    model_dims: ClassVar[Mapping[str, int] | None] = None  # see Target.model_dims
    options: ClassVar[Mapping[str, str]] = {}
    threads: ClassVar[int | None] = 1
    params: ClassVar[Params] = Params()

    @classmethod
    def work_counter(cls, backend: Any) -> WorkCounter | None:
        """A running total of the work ``backend`` (loaded) asks of its engine, or None."""
        return default_counter(backend)

    @pytest.fixture(scope="class")
    @classmethod
    def pdx_target(cls) -> Target:
        if cls.backend is None:
            pytest.fail(f"{cls.__name__}: set `backend` to the name your plugin registers")
        return Target(cls.backend, cls.model, dict(cls.options), cls.threads, model_dims=cls.model_dims)

    @pytest.fixture(scope="class")
    @classmethod
    def pdx_harness(cls, pdx_target, tmp_path_factory):
        harness = Harness(pdx_target, cls.params, tmp_path_factory.mktemp("pdx-contract"), cls.work_counter)
        yield harness
        harness.close()

    def test_manifest_and_engine_info(self, pdx_harness):
        checks.check_manifest(pdx_harness)

    def test_exact_tokens_and_sample_times(self, pdx_harness):
        checks.check_exact_tokens(pdx_harness)

    def test_warmup_runs_but_is_never_counted(self, pdx_harness):
        checks.check_warmup(pdx_harness)

    def test_depth_is_filled_before_the_clock(self, pdx_harness):
        checks.check_depth(pdx_harness)

    def test_errors_are_one_line_pdx_errors(self, pdx_harness):
        checks.check_errors(pdx_harness)

    def test_serving_scenario(self, pdx_harness):
        checks.check_serving(pdx_harness)

    # Last: it closes the backend (a later test would load it again).
    def test_ctrl_c_mid_run_then_close(self, pdx_harness):
        checks.check_cancel_and_close(pdx_harness)
