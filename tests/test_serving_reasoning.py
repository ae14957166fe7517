"""A reasoning model's stream split into thinking and answer (pdx.domain.serving.reasoning), through the real
streaming client against tests/fake_openai_server.py: a recorded vLLM reasoning stream
(``reasoning_content`` deltas, tests/data/reasoning/README.md says where it comes from), inline
``<think>`` spans, and a plain stream whose TTFT must not change."""

import json
from pathlib import Path

from hypothesis import given, strategies as st

from pdx.reports import figures
from pdx.measure.serving.load import closed_loop, run_load
from pdx.domain.serving.metrics import serving_stats
from pdx.measure.serving.openai import CompletionsClient, TextCompletions
from pdx.domain.serving.reasoning import ANSWER, REASONING, Phases
from pdx.domain.serving.records import RequestRecord

RECORDED = Path(__file__).parent / "data" / "reasoning" / "vllm_deepseek_r1_chat_stream.jsonl"


def one(url, max_tokens, dialect=None, **extra):
    client = CompletionsClient(url, "fake", timeout_s=10.0, extra_body=extra, dialect=dialect)
    result = run_load(client, closed_loop([[7000 + max_tokens, 5, 5, 5]], max_tokens))
    (record,) = result.records
    assert record.ok, record.error
    return record, result


def test_a_recorded_reasoning_stream_gives_ttfat_and_both_counts(fake_server):
    """vLLM's deepseek_r1 parser: 20 reasoning_content chunks, the </think> token in no chunk (usage counts
    it, pdx books it with the last chunk), 9 content chunks."""
    record, result = one(fake_server, 30, TextCompletions(), fake="reasoning", itl=0.005)
    assert record.n_gen == 30 and record.n_reasoning == 20 and record.n_answer == 10
    assert record.reasoning_ns == record.first_ns == record.ttft_ns
    assert record.ttfat_ns == record.answer_ns and record.answer_ns > record.first_ns
    # the answer's first chunk is the server's 22nd event (after the role's and 20 thinking ones), sent no
    # sooner than 21 gaps of 5 ms after the first (1 ms for the kernel stamps' conversion)
    assert record.answer_ns >= 21 * 5e6 - 1e6
    assert record.reasoning_rate > 0 and record.answer_rate > 0
    stats = serving_stats(result.records, result.makespan_ns)
    assert stats["reasoning"]["reasoning_tokens"] == 20 and stats["reasoning"]["answer_tokens"] == 10
    assert stats["ttfat_ms"]["median"] == record.answer_ns / 1e6
    notes = figures.serving_notes({"name": "r", "stats": stats})
    assert any(n.topic == "reasoning" and "20 thinking and 10 answer tokens" in n.text for n in notes)
    again = RequestRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert (again.n_reasoning, again.answer_ns, again.ttfat_ns) == (20, record.answer_ns, record.ttfat_ns)


def test_a_plain_stream_keeps_its_ttft_and_has_no_phases(fake_server):
    record, result = one(fake_server, 8)
    assert record.n_reasoning is None and record.reasoning_ns is None and record.answer_ns is None
    assert record.ttfat_ns == record.ttft_ns == record.first_ns == record.events[0][0]
    stats = serving_stats(result.records, result.makespan_ns)
    assert "reasoning" not in stats and "ttfat_ms" not in stats


def test_inline_think_spans_are_thinking(fake_server):
    for mode in ("think-inline", "think-close"):  # with the opening tag, and with it left to the template
        record, _ = one(fake_server, 8, fake=mode)
        assert record.n_reasoning == 4 and record.n_answer == 4, mode
        assert record.reasoning_ns == record.first_ns and record.answer_ns == record.events[4][0], mode


_chunk = st.one_of(
    st.fixed_dictionaries({"choices": st.lists(st.fixed_dictionaries({"text": st.sampled_from(
        ["", " a", "<think>", "</think>", "x</think>y", "<think>a</think>"])}), max_size=2)}),
    st.fixed_dictionaries({"choices": st.lists(st.fixed_dictionaries({"delta": st.dictionaries(
        st.sampled_from(["content", "reasoning_content", "reasoning", "role"]),
        st.one_of(st.none(), st.text(max_size=3)))}), max_size=2)}),
    st.dictionaries(st.sampled_from(["content", "stop"]), st.one_of(st.text(max_size=8), st.integers())))


@given(st.lists(st.tuples(_chunk, st.integers(1, 3)), max_size=20))
def test_phases_count_every_token_once(events):
    record, phases, t = RequestRecord(idx=0, n_prompt=1, max_tokens=100), Phases(), 0
    for event, tokens in events:
        t += 1
        record.first_ns = record.first_ns if record.first_ns is not None else t
        record.events.append((t, tokens))
        record.count_phase(phases.phase(event), t, tokens)
    record.settle_phases()
    assert 0 <= record.n_answer <= record.n_gen
    assert record.n_reasoning is None or 0 < record.n_reasoning <= record.n_gen
    assert record.ttfat_ns is None or record.ttfat_ns >= record.first_ns


def test_a_delta_is_read_by_its_fields():
    phases = Phases()
    assert phases.phase({"choices": [{"delta": {"reasoning": "hm"}}]}) == REASONING
    assert phases.phase({"choices": [{"delta": {"content": "ok"}}]}) == ANSWER


def _stored(record: RequestRecord) -> dict:
    from datetime import datetime, timezone

    from pdx.contract.backend import Sample
    from pdx.measure.runner import TestOutcome
    from pdx.domain.serving.spec import ServeSpec

    now = datetime.now(timezone.utc)
    sample = Sample(ns=record.end_ns, n_prompt=record.n_prompt, n_gen=record.n_gen, requests=[record])
    return TestOutcome(ordinal=0, test=ServeSpec("load", 4, record.max_tokens, concurrency=1, n_requests=1),
                       warmup=0, samples=[sample], started_at=now, finished_at=now).to_record()


def test_the_registry_refuses_phases_that_disagree_with_the_stream():
    import pytest

    from pdx.contract.errors import PdxError
    from pdx.registry.validate import check_test

    MS = 1_000_000
    events = [(10 * MS * (i + 1), 1) for i in range(4)]
    good = RequestRecord(0, 4, 4, first_ns=10 * MS, end_ns=40 * MS, events=events, reasoning_ns=10 * MS,
                         answer_ns=30 * MS, n_reasoning=2)
    check_test(_stored(good))
    for change, needle in (({"n_reasoning": 5}, "n_reasoning: 5 thinking tokens of 4"),
                           ({"answer_ns": 5 * MS}, "answer_ns: 5000000 is before the first token")):
        bad = RequestRecord.from_dict(good.to_dict() | change)
        with pytest.raises(PdxError, match=needle):
            check_test(_stored(bad))
