"""``--backend openai``: any OpenAI-compatible server by URL, over the shared client, against
the local test server (tests/fake_openai_server.py). A real llama-server: tests/test_contract_llamacpp.py."""

import json


from pdx.measure.serving.load import Planned, run_load
from pdx.measure.serving.openai import CompletionsClient, OpenAICompletions, TextCompletions

from conftest import assert_one_line_error, run_pdx


def _one(url: str, mode: str, dialect=None, n: int = 10):
    client = CompletionsClient(url, f"fake-{mode}", dialect=dialect or TextCompletions())
    (record,) = run_load(client, iter([Planned([20, 21, 22], n)])).records
    return record


def test_a_closing_chunk_without_text_carries_no_token(fake_server):
    record = _one(fake_server, "closing")  # as llama-server streams /v1/completions
    assert record.ok, record.error
    assert record.n_gen == 10 and len(record.events) == 10 and record.finish_reason == "length"
    plain = _one(fake_server, "closing", OpenAICompletions())  # one token per chunk: one too many
    assert not plain.ok and "the stream ended after 11 of 10 tokens" in plain.error


def test_merged_text_chunks_are_settled_against_usage_or_fail_without_it(fake_server):
    record = _one(fake_server, "closing-merged")
    assert record.ok and record.n_gen == 10 and len(record.events) == 9 and record.engine["merged_tokens"] == 1
    short = _one(fake_server, "closing-merged-nousage")
    assert not short.ok and "the stream ended after 9 of 10 tokens" in short.error


def test_bench_and_serve_bench_by_url(fake_server, registry_url):
    result = run_pdx("bench", "--backend", "openai", "--url", fake_server, "-o", "model_name=fake-closing-merged",
                     "-p", "16", "-n", "8", "-r", "2", "--registry", registry_url, "--json")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    tests = {t["name"]: t for t in run["tests"]}
    assert run["backend"] == "openai" and run["status"] == "complete"
    assert all(r["n_gen"] == 9 for r in tests["tg8"]["requests"])
    # The test server streams text (no ids, one chunk carrying two tokens): tg is still timed from the
    # events, first token to last, each sample from its own request.
    requests = {r["sample_idx"]: r for r in tests["tg8"]["requests"]}
    for k, sample in enumerate(tests["tg8"]["samples"]):
        events = requests[k]["events"]
        assert sample["ns"] == events[-1][0] - events[0][0] > 0 and sample["n_gen"] == 8
    assert run["engine"]["name"] == "OpenAI-compatible server" and run["engine"]["settings"]["url"] == fake_server
    served = run_pdx("serve-bench", "--backend", "openai", "--url", fake_server, "-o", "model_name=fake",
                     "-c", "2", "-p", "8", "-n", "4", "--num-requests", "4", "--registry", registry_url, "--json")
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout)[0]["tests"][0]["stats"]["completed"] == 4


def test_a_sample_whose_tokens_arrive_at_once_is_sent_again_then_refused(fake_server, registry_url):
    bench = ("bench", "--backend", "openai", "--url", fake_server, "-p", "8", "-n", "4", "-r", "2",
             "--registry", registry_url, "--json")
    # Every other request in one burst: each tg sample (the warm-up one too) is timed on its second
    # try, and the test says how many were sent again: three, or two more for each request that a
    # stalled client (a busy machine) also read at once, as pdx should.
    once = run_pdx(*bench, "-o", "model_name=fake-burst-odd")
    assert once.returncode == 0, once.stderr
    (run,) = json.loads(once.stdout)
    tests = {t["name"]: t for t in run["tests"]}
    tg = tests["tg4"]
    assert run["status"] == "complete" and tg["engine"]["burst_retries"] % 2 == 1 and len(tg["samples"]) == 2
    assert tg["engine"]["burst_retries"] >= 3
    assert "burst_retries" not in tests["pp8"]["engine"]
    assert all(s["ns"] > 0 for s in tg["samples"]) and len(tg["requests"]) == 2
    # Always in one burst: refused after five tries, the pp test kept, the last try's requests stored.
    always = run_pdx(*bench, "-o", "model_name=fake-burst")
    assert always.returncode == 1
    (run,) = json.loads(always.stdout)
    tests = {t["name"]: t for t in run["tests"]}
    assert run["status"] == "partial" and tests["pp8"]["status"] == "ok"
    assert tests["tg4"]["status"] == "failed" and "every token arrived at once" in tests["tg4"]["error"]
    assert "in 5 tries" in tests["tg4"]["error"] and "--threads" in tests["tg4"]["error"]
    assert [r["n_gen"] for r in tests["tg4"]["requests"]] == [5]


def test_without_a_url_it_says_what_to_give(fake_server, registry_url):
    assert_one_line_error(run_pdx("bench", "--backend", "openai", "--registry", registry_url),
                          "backend openai is not available", "--url")
    assert_one_line_error(run_pdx("bench", "--backend", "openai", "--url", "http://127.0.0.1:1",
                                  "--registry", registry_url), "cannot reach a server at http://127.0.0.1:1")
    assert_one_line_error(run_pdx("bench", "--backend", "openai", "--url", fake_server, "--server-args", "-c 4",
                                  "--registry", registry_url), "has no option 'server_args'")
