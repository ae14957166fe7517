"""One prompt stream (pdx.domain.prompt_stream): the ids themselves, their addressing, and every backend
fed the same ids for the same seed and test. What each backend hands its engine is taken from
the function that builds it (llama.cpp's decode batches, MLX's arrays, vLLM's add_request
prompt, each server dialect's request body); the server backends are also caught sending them
to a live server (tests/fake_openai_server.py), and llama.cpp in-process receiving them in
llama_decode (tests/test_llamacpp.py)."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdx.contract.backend import BackendConfig
from pdx.base.plugin_manager import get_backend
from pdx.plugins.llamacpp.inprocess import feed
from pdx.plugins.mlx.measure import token_rows
from pdx.plugins.vllm.offline import engine_prompt
from pdx.domain.prompt_stream import FIRST_ID, UNKNOWN_VOCAB, VERSION, PromptStream, token_ids
from pdx.measure.serving.openai import CompletionsClient, LlamaServerCompletion, OpenAICompletions, TextCompletions
from pdx.domain.serving.prompts import PromptMaker
from pdx.domain.serving.records import RequestsFailed
from pdx.measure.serving.runs import depth_request, matrix_requests
from pdx.domain.workload import TestSpec, Workload, build_workload

from conftest import run_pdx

TESTS = [TestSpec(8, 0), TestSpec(0, 4), TestSpec(8, 4), TestSpec(8, 0, 16), TestSpec(0, 4, 16, batch=3),
         TestSpec(8, 4, 16, batch=2)]


def as_bytes(ids) -> bytes:
    return struct.pack(f"<{len(ids)}q", *ids)


def test_the_ids_are_pinned_for_this_version():
    # The ids of version 1: if this changes, so must VERSION (stored with every run).
    assert VERSION == 1
    assert token_ids(42, 32000, "pp16", 0, "prompt", 0, 10) == [17291, 3388, 25226, 31060, 23643, 29103, 26997,
                                                                16974, 20118, 844]
    assert token_ids(42, 1024, "tg4@d16/b2", 3, "decode", 1, 4) == [664, 699, 810, 122]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(-2**63, 2**63), n_vocab=st.integers(FIRST_ID + 1, 300_000), n=st.integers(0, 100),
       more=st.integers(0, 20), key=st.text(max_size=30), rep=st.integers(0, 10**6), seq=st.integers(0, 512))
def test_ids_are_exact_in_range_and_a_longer_part_extends_a_shorter(seed, n_vocab, n, more, key, rep, seq):
    ids = token_ids(seed, n_vocab, key, rep, "prompt", seq, n)
    assert len(ids) == n and all(isinstance(i, int) and FIRST_ID <= i < n_vocab for i in ids)
    assert token_ids(seed, n_vocab, key, rep, "prompt", seq, n + more)[:n] == ids
    assert token_ids(seed, n_vocab, key, rep, "prompt", seq, n) == ids  # no state: the address is all


def test_parts_sequences_repetitions_and_seeds_are_apart():
    drawn = {(seed, rep, part, seq): tuple(token_ids(seed, 32000, "pp64", rep, part, seq, 64))
             for seed in (1, 2) for rep in (0, 1) for part in ("depth", "prompt", "decode") for seq in (0, 1)}
    assert len(set(drawn.values())) == len(drawn)
    with pytest.raises(ValueError, match="has none from id 16 on"):
        token_ids(1, FIRST_ID, "pp1", 0, "prompt", 0, 1)


def test_each_repetition_is_fresh_and_a_continuation_goes_on():
    test = TestSpec(16, 4, 32, batch=2)
    stream = PromptStream(5, 1024)
    first, second = stream.next(test), stream.next(test)
    assert first != second and first.depth != second.depth
    assert len(first.depth) == 32
    assert [len(p) for p in first.prompts] == [16, 16]
    assert first.prompts[0] != first.prompts[1]
    assert [len(d) for d in first.decode] == [4, 4]
    tool_run, third = stream.next(test, key="tool-run"), stream.next(test)
    replay = PromptStream(5, 1024)
    assert [replay.next(test) for _ in range(3)] == [first, second, third]  # a run set apart shifts nothing
    assert tool_run not in (first, second, third)
    assert PromptStream(5).n_vocab == UNKNOWN_VOCAB and PromptStream(5, 3).n_vocab == FIRST_ID + 1


def _server(test, prompts) -> list[list[int]]:
    """The prompts a server backend sends for one repetition, as each dialect puts them in its body."""
    sent = []
    for dialect in (OpenAICompletions(), TextCompletions(), LlamaServerCompletion()):
        client = CompletionsClient("http://127.0.0.1:1", "m", dialect=dialect)
        sent.append([json.loads(client.body(r.prompt, r.max_tokens))["prompt"] for r in matrix_requests(test, prompts)])
    assert sent[0] == sent[1] == sent[2]
    fill = depth_request(prompts)
    assert (fill.prompt if fill else []) == prompts.depth and all(p[:test.depth] == prompts.depth for p in sent[0])
    return sent[0]


def _vllm(test, prompts) -> list[list[int]]:
    return [engine_prompt(r)["prompt_token_ids"] for r in matrix_requests(test, prompts)]


def _llamacpp(test, prompts) -> list[list[int]]:
    """Per sequence, the ids llama_decode receives before the first token is generated."""
    plan = feed(test, prompts)
    first = plan.steps[0] if plan.steps and not test.n_prompt else []
    return [[t for t, _, s, _ in plan.depth + plan.prompt + first if s == seq] for seq in range(test.batch)]


def _mlx(test, prompts) -> list[list[int]]:
    depth, prompt, first = token_rows(test, prompts)
    parts = [a for a in (depth, prompt if prompt is not None else first) if a is not None]
    return [sum((a[seq].tolist() for a in parts), []) for seq in range(test.batch)]


@pytest.mark.parametrize("test", TESTS, ids=lambda t: t.name)
def test_every_backend_is_fed_the_same_ids_for_the_same_seed_and_test(test):
    fed = {name: how(test, PromptStream(11, 1024).next(test))
           for name, how in (("server", _server), ("vllm", _vllm), ("llamacpp", _llamacpp), ("mlx", _mlx))}
    expected = PromptStream(11, 1024).next(test)
    for name, sequences in fed.items():
        assert len(sequences) == test.batch, name
        for seq, ids in enumerate(sequences):
            assert as_bytes(ids) == as_bytes(expected.sent(seq)), (name, seq)
    # llama.cpp feeds every decode step itself: the stream's ids, positioned after the prompt.
    steps = feed(test, expected).steps
    assert [[t for t, _, _, _ in step] for step in steps] == [list(c) for c in zip(*expected.decode)]
    assert all(p == test.depth + test.n_prompt + k for k, step in enumerate(steps) for _, p, _, _ in step)


def test_scenario_prompts_are_drawn_in_turn_from_their_repetition():
    stream = PromptStream(3, 1024)
    maker = PromptMaker(stream, "c4:p8+g6:n8")
    a, b = maker.tokens(8), maker.tokens(8)
    assert a != b and len(a) == 8
    prefix = maker.tokens(4)
    shared = maker.many(3, 10, prefix)
    assert all(p[:4] == prefix and len(p) == 10 for p in shared) and len({tuple(p) for p in shared}) == 3
    endless = maker.stream(5)
    assert len({tuple(next(endless)) for _ in range(20)}) == 20
    assert isinstance(maker.seed(), int)
    replay = PromptMaker(PromptStream(3, 1024), "c4:p8+g6:n8")
    assert [replay.tokens(8), replay.tokens(8)] == [a, b]
    assert PromptMaker(stream, "c4:p8+g6:n8").tokens(8) != a  # the scenario's next repetition
    with pytest.raises(ValueError, match="does not fit"):
        maker.tokens(3, prefix)


def _sent_to(fake_server, backend: str, tests) -> list[list[int]]:
    """Run ``tests`` on a server backend pointed at the test server; the prompts its client sent."""
    cls = get_backend(backend)
    config = BackendConfig(threads=1, options={"url": fake_server, "model_name": "fake"}, seed=11)
    instance = cls(config)
    instance.load(cls.served_model(config))
    sent, send = [], instance.client.send
    instance.client.send = lambda loop, record, prompt, *rest: (sent.append(list(prompt)), send(loop, record, prompt,
                                                                                                *rest))
    try:
        for test in tests:
            try:
                list(instance.run(test, 1, 1))
            except RequestsFailed:  # a tg the test server's stream coalesced: its prompts were still sent
                pass
    finally:
        instance.close()
    return sent


def test_server_backends_send_the_stream_to_a_live_server(fake_server):
    tests = [TestSpec(8, 0, 16, batch=2), TestSpec(0, 2)]
    openai, vllm = (_sent_to(fake_server, b, tests) for b in ("openai", "vllm-server"))
    stream = PromptStream(11, UNKNOWN_VOCAB)  # a server's vocabulary unknown to pdx
    expected = []
    for test in tests:
        for _ in range(2):  # the warm-up, then the repetition
            prompts = stream.next(test)
            expected += ([prompts.depth] if test.depth else []) + [prompts.sent(s) for s in range(test.batch)]
    assert [as_bytes(p) for p in openai] == [as_bytes(p) for p in vllm] == [as_bytes(p) for p in expected]


def test_the_stored_run_names_the_prompt_stream(fake_server, registry_url):
    assert Workload.from_dict(build_workload(n_prompt="8", n_gen="0").to_dict()).to_dict()["prompts"] == VERSION
    result = run_pdx("bench", "--backend", "openai", "--url", fake_server, "-o", "model_name=fake", "-p", "8",
                     "-n", "0", "-r", "1", "--registry", registry_url, "--json")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    assert run["workload"]["prompts"] == VERSION and run["workload"]["seed"] == 42
