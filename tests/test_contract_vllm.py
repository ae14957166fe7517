"""The backend contract suite (pdx.testing) against both vLLM backends: in-process (its
work counted at ``add_request``) and ``vllm serve`` started by pdx."""

from __future__ import annotations

import json

import pytest

from pdx.testing import BackendContract, count_calls

from test_vllm import ENGINE_ARGS, SERVER_ARGS

pytestmark = pytest.mark.vllm


def _requested(request_id, prompt, params, *rest, **kwargs) -> int:
    return len(prompt["prompt_token_ids"]) + params.max_tokens


class TestVllmOffline(BackendContract):
    backend = "vllm"
    options = {"engine_args": json.dumps(ENGINE_ARGS)}

    @classmethod
    def work_counter(cls, backend):
        return count_calls(backend.llm.llm_engine, "add_request", _requested)


class TestVllmServer(BackendContract):
    backend = "vllm-server"
    options = {"server_args": SERVER_ARGS}
