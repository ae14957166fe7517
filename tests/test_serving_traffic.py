"""Traffic shapes (pdx.domain.serving.traffic): shared system prompts, multi-turn conversations, length
distributions, trace replay and ramp-up, token-exact from the seed."""

import json
import random

import pytest
from hypothesis import given, strategies as st

from pdx.contract.errors import PdxError, WorkloadError
from pdx.measure.serving.load import arrivals
from pdx.domain.prompt_stream import PromptStream
from pdx.domain.serving.prompts import PromptMaker
from pdx.domain.serving.spec import ServeSpec
from pdx.domain.serving.traffic import Lengths, Shape, read_trace, trace_requests

from conftest import assert_one_line_error, run_pdx


def prompts(seed=42):
    return PromptMaker(PromptStream(seed, 32000), "traffic")


@given(st.sampled_from(["uniform", "lognormal"]), st.floats(0.01, 1.0), st.integers(1, 10_000), st.integers(0, 99))
def test_lengths_are_whole_positive_and_within_their_bounds(kind, spread, mean, seed):
    lengths = Lengths.parse(f"{kind}:{spread}", "--input-dist")
    drawn = [lengths.draw(random.Random(seed), mean) for _ in range(20)]
    assert all(isinstance(n, int) and n >= 1 for n in drawn)
    if kind == "uniform":
        assert all(mean * (1 - spread) - 1 <= n <= mean * (1 + spread) + 1 for n in drawn)
    assert drawn == [lengths.draw(random.Random(seed), mean) for _ in range(20)]  # the seed decides
    assert Lengths.parse(str(lengths), "--input-dist") == lengths


def test_length_parsing_errors():
    assert Lengths.parse(None, "--input-dist") == Lengths.parse("fixed", "--input-dist") == Lengths()
    for bad in ("uniform", "uniform:2", "lognormal:-1", "normal:0.5", "lognormal:x"):
        with pytest.raises(PdxError, match="--output-dist"):
            Lengths.parse(bad, "--output-dist")


def test_a_shared_system_prompt_leads_every_request():
    requests = list(Shape(16, 4, system=32).requests(prompts(), random.Random(1), 5))
    system = requests[0][0][:32]
    assert all(p[:32] == system and len(p) == 48 and n == 4 and role == "load" and session is None
               for p, n, role, session in requests)
    assert len({tuple(p[32:]) for p, _, _, _ in requests}) == 5  # the user parts differ


def test_turns_grow_each_conversation_by_its_history():
    shape = Shape(8, 3, system=4, turns=3)
    requests = list(shape.requests(prompts(), random.Random(1), 6))
    assert [role for _, _, role, _ in requests] == ["turn1", "turn1", "turn2", "turn2", "turn3", "turn3"]
    assert [session for _, _, _, session in requests] == ["0.0", "0.1"] * 3  # each turn keeps its conversation
    for conv in (0, 1):
        turns = [requests[conv + 2 * t][0] for t in range(3)]
        for earlier, later in zip(turns, turns[1:]):
            # the history (the earlier prompt and a 3-token stand-in reply) then 8 new tokens
            assert later[:len(earlier)] == earlier and len(later) == len(earlier) + 3 + 8
    assert requests[0][0][:4] == requests[1][0][:4] and requests[0][0][4:] != requests[1][0][4:]
    again = list(shape.requests(prompts(), random.Random(1), 6))
    assert again == requests  # token-exact from the seed


def test_a_trace_replays_its_offsets_lengths_and_conversations(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [
        {"timestamp": 5.0, "input_len": 10, "output_len": 2, "conversation_id": "a"},
        {"timestamp": 5.5, "input_length": 6, "output_length": 1},
        {"timestamp": 6.0, "input_len": 20, "output_len": 3, "conversation_id": "a"}]) + "\n\n")
    lines, digest = read_trace(str(path))
    assert [(x.at_s, x.input_len, x.output_len) for x in lines] == [(0.0, 10, 2), (0.5, 6, 1), (1.0, 20, 3)]
    assert len(digest) == 64
    out = list(trace_requests(lines, prompts()))
    assert [(len(p), n, at, role, conv) for p, n, at, role, conv in out] == [
        (10, 2, 0.0, "turn1", "a"), (6, 1, 0.5, "trace", None), (20, 3, 1.0, "turn2", "a")]
    assert out[2][0][:10] == out[0][0]  # the second turn starts with the first one's prompt


@pytest.mark.parametrize("text, message", [
    ("not json", "line 1 is not a JSON object"),
    ('{"input_len": 3, "output_len": 1}', "line 1 is not a JSON object with a timestamp"),
    ('{"timestamp": 0, "input_len": 0, "output_len": 1}', "line 1: input_len and output_len"),
    ('{"timestamp": -1, "input_len": 3, "output_len": 1}', "line 1: input_len and output_len"),
    ('{"timestamp": 0, "input_len": true, "output_len": 1}', "line 1: input_len and output_len"),
    ("", "no requests in it"),
])
def test_bad_traces_are_one_clear_error(tmp_path, text, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(PdxError, match=message):
        read_trace(str(path))


def test_ramp_up_starts_slow_and_reaches_the_rate():
    ramped = [t for _, t in zip(range(400), arrivals(20.0, 1.0, seed=3, ramp_s=10.0))]
    steady = [t for _, t in zip(range(400), arrivals(20.0, 1.0, seed=3))]
    assert sum(t < 5 for t in ramped) < sum(t < 5 for t in steady)  # fewer arrivals while it ramps
    assert ramped == sorted(ramped)


def test_traffic_shapes_name_the_test_and_are_checked():
    spec = ServeSpec("load", 16, 4, concurrency=2, n_requests=8, system_prompt=32, turns=3,
                     input_dist="lognormal:0.5", ramp_s=0)
    assert spec.name == "c2:p16+g4:n8:sys32:turns3:in-lognormal:0.5"
    assert ServeSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(WorkloadError, match="--ramp-up needs an open loop"):
        ServeSpec("load", 16, 4, concurrency=2, n_requests=8, ramp_s=5)
    with pytest.raises(PdxError, match="--input-dist"):
        ServeSpec("load", 16, 4, concurrency=2, n_requests=8, input_dist="zipf:1")


def test_think_time_holds_each_turn_until_the_one_before_ended_and_the_user_thought(fake_server, registry_url):
    result = run_pdx("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-o", "model_name=fake",
                     "-c", "4", "--turns", "2", "--think-time", "0.3", "-p", "8", "-n", "3", "--num-requests", "4",
                     "--registry", registry_url, "--json")
    assert result.returncode == 0, result.stderr
    (test,) = json.loads(result.stdout)[0]["tests"]
    assert test["spec"]["think_s"] == 0.3 and test["name"].endswith(":think0.3s")
    ordered = sorted(test["requests"], key=lambda r: r["idx"])
    first, second = ordered[:2], ordered[2:]
    assert [r["role"] for r in first + second] == ["turn1", "turn1", "turn2", "turn2"]
    for before, after in zip(first, second):  # conversation k's turns: requests k and k + 2
        assert after["send_ns"] >= before["send_ns"] + before["end_ns"] + 0.3e9
    with pytest.raises(WorkloadError, match="--think-time"):
        ServeSpec("load", 8, 3, concurrency=4, n_requests=4, think_s=1.0)


def test_multi_turn_through_the_cli(fake_server, registry_url, tmp_path):
    result = run_pdx("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-o", "model_name=fake",
                     "-c", "2", "--turns", "3", "--system-prompt", "8", "-p", "8", "-n", "3", "--num-requests", "6",
                     "--output-dist", "uniform:0.5", "--registry", registry_url, "--json")
    assert result.returncode == 0, result.stderr
    (test,) = json.loads(result.stdout)[0]["tests"]
    turns = test["stats"]["turns"]
    assert [t["turn"] for t in turns] == [1, 2, 3] and all(t["requests"] == 2 for t in turns)
    assert turns[0]["prompt_mean"] < turns[1]["prompt_mean"] < turns[2]["prompt_mean"]
    assert all(r["n_gen"] == r["max_tokens"] for r in test["requests"])
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_len": 8, "output_len": 2}\n{"timestamp": 0.1, "input_len": 9, '
                     '"output_len": 2}\n')
    result = run_pdx("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-o", "model_name=fake",
                     "--trace", str(trace), "--registry", registry_url, "--json")
    assert result.returncode == 0, result.stderr
    (test,) = json.loads(result.stdout)[0]["tests"]
    assert [r["n_prompt"] for r in test["requests"]] == [8, 9] and test["spec"]["trace_sha256"]
    trace.write_text("{oops\n")
    assert_one_line_error(run_pdx("serve-bench", "--backend", "vllm-server", "--url", fake_server, "--trace",
                                  str(trace), "--registry", registry_url), "line 1 is not a JSON object")


def test_a_test_name_fits_the_registry_however_many_options_it_has():
    from pdx.contract.record import TEST_NAME_MAX
    from pdx.domain.serving.spec import ServeSpec

    long_ones = [ServeSpec("capacity", 32, 8, concurrency=1, slo={"ttft": 2000, "tpot": 200, "itl": 50, "e2el": 9000},
                           n_requests=8, system_prompt=160, turns=t, input_dist="uniform:0.25",
                           output_dist="lognormal:0.5") for t in (2, 3)]
    names = [s.name for s in long_ones]
    assert all(len(n) == TEST_NAME_MAX for n in names) and len(set(names)) == 2  # cut, and still apart
    short = ServeSpec("load", 32, 8, concurrency=4, n_requests=8)
    assert short.name == "c4:p32+g8:n8"
