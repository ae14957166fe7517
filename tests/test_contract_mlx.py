"""The backend contract suite (pdx.testing) against the MLX backend on MLX's Linux CPU
backend, its work counted per repetition at ``Measure.once``."""

from __future__ import annotations

import pytest

from pdx.testing import BackendContract, count_calls

pytestmark = pytest.mark.mlx


class TestMlx(BackendContract):
    backend = "mlx"

    @classmethod
    def work_counter(cls, backend):
        return count_calls(backend.measure, "once", lambda test: (test.depth + test.n_prompt + test.n_gen) * test.batch)
