"""The streaming client against a local server with a known schedule
(tests/fake_openai_server.py): exact token counts, timing, load shapes, and
every way a stream can fail, recorded per request."""

import socket
import statistics

import pytest
import requests

from pdx.measure.serving.load import Planned, arrivals, closed_loop, for_duration, open_loop, run_load
from pdx.measure.serving.openai import CompletionsClient


def client(url, timeout_s=10.0, **extra):
    return CompletionsClient(url, "fake", timeout_s=timeout_s, extra_body=extra)


def prompts(n, first=1000, length=4):
    return [[first + i] + [5] * (length - 1) for i in range(n)]


def test_a_stream_is_timed_token_by_token(fake_server):
    result = run_load(client(fake_server), closed_loop(prompts(1, first=50), 8))
    (record,) = result.records
    assert record.ok and record.error is None, record.error
    assert record.n_gen == 8 and len(record.events) == 8 and record.http_status == 200
    assert record.usage["prompt_tokens"] == 4 and record.finish_reason == "length"
    # The server sends token i at 50 + 10 i ms at the soonest (later on a busy machine, never sooner; the
    # 1 ms is for the conversion of the kernel's stamps to pdx's clock).
    assert all(t >= (49 + i * 10) * 1e6 for i, (t, _) in enumerate(record.events))
    assert all(gap >= 0 for gap in record.itl_ns)
    assert record.end_ns >= record.events[-1][0] and record.tpot_ns > 0
    # Each arrival is stamped by the kernel: after the server sent it (how soon after is a benchmark's
    # figure, tests/benchmarks/serving_client_timing.py).
    sent = requests.get(f"{fake_server}/sends").json()["50"]
    arrivals_ns = [result.origin_ns + record.send_ns + t for t, _ in record.events]
    assert len(sent) == 8 and all(a >= s - 1e6 for a, s in zip(arrivals_ns, sent))


def test_chunks_merged_without_ids_are_reconciled_with_usage(fake_server):
    result = run_load(client(fake_server, fake="merged"), closed_loop(prompts(1, first=60), 8))
    (record,) = result.records
    assert record.ok, record.error
    assert record.n_gen == 8 and len(record.events) == 7 and record.engine["merged_tokens"] == 1


@pytest.mark.parametrize("mode, needle", [
    ("http400", "HTTP 400: fake 400 error"),
    ("http500", "HTTP 500: fake 500 error"),
    ("early", "the stream ended after 4 of 8 tokens"),
    ("drop", "closed the connection mid-response"),
    ("malformed", "malformed SSE event: '{not json'"),
    ("error", "server error in stream: EngineCore encountered an issue"),
    ("hang", "timed out after"),
    ("miscount", "the stream carried 8 tokens but the server counted 9"),
])
def test_failures_are_recorded_per_request_and_the_rest_complete(fake_server, mode, needle):
    bad = client(fake_server, timeout_s=1.0, fake=mode)
    good = client(fake_server, timeout_s=5.0)
    plan = [Planned([2000], 8), Planned([2001], 8)]
    failing = run_load(bad, iter(plan[:1]))
    passing = run_load(good, iter(plan[1:]))
    (record,) = failing.records
    assert record.status == "error" and needle in record.error, record.error
    assert record.end_ns is not None
    if mode in ("early", "drop", "malformed", "error", "hang"):
        assert 1 <= record.n_gen < 8  # the tokens received before the failure are kept
    assert passing.records[0].ok


def test_a_refused_connection_is_an_error_on_the_request():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once it is closed
    result = run_load(client(f"http://127.0.0.1:{port}"), closed_loop(prompts(2), 4), max_concurrency=2)
    assert [r.status for r in result.records] == ["error", "error"]
    assert "cannot connect" in result.records[0].error


def test_closed_loop_keeps_the_concurrency_and_skips_warmup(fake_server):
    result = run_load(client(fake_server), closed_loop(prompts(12, first=3000), 4), max_concurrency=3,
                      warmup=[Planned([2999], 2)])
    records = result.records
    assert len(records) == 12 and all(r.ok for r in records)
    # At every send, at most 3 requests are in flight, and 3 are reached.
    spans = [(r.send_ns, r.send_ns + r.end_ns) for r in records]
    in_flight = [sum(1 for a, b in spans if a <= t < b) for t, _ in spans]
    assert max(in_flight) == 3
    assert result.makespan_ns > 0 and result.cpu_s >= 0


def test_open_loop_sends_on_the_drawn_schedule(fake_server):
    offsets = list(zip(range(10), arrivals(20.0, 1.0, seed=1)))
    result = run_load(client(fake_server), open_loop(prompts(10, first=4000), 2, rate=20.0, seed=1))
    # Each request leaves at its drawn time (later on a busy machine, never sooner), in the drawn order.
    for record, (_, at) in zip(result.records, offsets):
        assert record.send_ns >= at * 1e9
    assert len(result.records) == 10 and [r.n_prompt for r in result.records] == [4] * 10
    assert [r.send_ns for r in result.records] == sorted(r.send_ns for r in result.records)


def test_arrival_processes():
    gaps = lambda xs: [b - a for a, b in zip(xs, xs[1:])]
    poisson = [t for _, t in zip(range(4001), arrivals(10.0, 1.0, seed=3))]
    bursty = [t for _, t in zip(range(4001), arrivals(10.0, 0.25, seed=3))]
    assert statistics.fmean(gaps(poisson)) == pytest.approx(0.1, rel=0.06)
    assert statistics.fmean(gaps(bursty)) == pytest.approx(0.1, rel=0.15)
    # Gamma gaps of shape k have a coefficient of variation of 1/sqrt(k).
    cv = lambda xs: statistics.pstdev(xs) / statistics.fmean(xs)
    assert cv(gaps(poisson)) == pytest.approx(1.0, rel=0.1) and cv(gaps(bursty)) == pytest.approx(2.0, rel=0.15)
    assert [t for _, t in zip(range(3), arrivals(float("inf")))] == [0.0, 0.0, 0.0]


def test_duration_limits_a_run(fake_server):
    plan = for_duration(closed_loop(prompts(1000, first=5000), 4), 0.3)
    result = run_load(client(fake_server), plan, max_concurrency=2)
    assert 2 <= len(result.records) < 20 and all(r.ok for r in result.records)
    timed = list(open_loop(prompts(1000), 4, rate=100.0, duration_s=0.5))
    assert 20 < len(timed) < 90 and all(p.at_s < 0.5 for p in timed)


def test_https_streams_keep_their_timing(tmp_path, monkeypatch):
    import subprocess
    import sys

    from conftest import FAKE_SERVER

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trust the test certificate, verification stays on
    proc = subprocess.Popen([sys.executable, str(FAKE_SERVER), "--ttft", "0.05", "--itl", "0.01",
                             "--tls", str(cert), str(key)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split()[1])
        result = run_load(client(f"https://localhost:{port}"), closed_loop(prompts(3, first=6000), 8),
                          max_concurrency=3)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert all(r.ok and r.n_gen == 8 for r in result.records), [r.error for r in result.records]
    assert all(r.first_ns >= 49e6 for r in result.records)  # the server's 50 ms at the soonest
