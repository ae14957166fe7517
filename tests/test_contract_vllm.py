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
    # Wider than the suite's streaming model: on 2 cores shared by vLLM's engine core (which polls), its API
    # server and this client, the API server can fall behind a fast engine and send a whole tg in one
    # chunk, which pdx rightly refuses to time; at ~20 ms a token it keeps up even with a third process busy.
    model_dims = {"n_embd": 1024, "n_layers": 8, "n_heads": 16, "n_kv_heads": 16, "n_ff": 2816, "n_vocab": 32000}
