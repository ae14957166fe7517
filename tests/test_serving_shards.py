"""One load test from several client processes (issue 30): the plan's shares, the merged clock, a shard
that dies, and what is refused; against tests/fake_openai_server.py, pdx's own clients in worker
processes (the Ray pool's run against llama-server: tests/test_serving_ray.py)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdx.registry.redact import HOST_MARK, redact_record
from pdx.measure.serving.load import Planned
from pdx.measure.serving.shards import caps, merge, share

from conftest import assert_one_line_error, pdx_here, run_pdx_here


def _plan(sessions: list[str | None]) -> list[Planned]:
    return [Planned([i], 1, session=s) for i, s in enumerate(sessions)]


@given(st.lists(st.one_of(st.none(), st.sampled_from("abcdef")), max_size=60), st.integers(1, 5))
def test_every_request_goes_to_one_shard_and_a_conversation_stays_on_one(sessions, n):
    plan = _plan(sessions)
    shares = [list(share(iter(plan), n, k)) for k in range(n)]
    sent = sorted(p.prompt[0] for s in shares for p in s)
    assert sent == list(range(len(plan)))  # each once, none lost
    for session in set(filter(None, sessions)):
        assert sum(any(p.session == session for p in s) for s in shares) == 1
    singles = [len([p for p in s if p.session is None]) for s in shares]
    assert max(singles) - min(singles) <= 1  # dealt in turn


def test_a_cap_is_split_and_none_stays_none():
    assert caps(7, 3) == [3, 2, 2] and sum(caps(64, 5)) == 64 and caps(None, 2) == [None, None]


def test_merged_records_are_renumbered_in_sending_order():
    results = {0: {"records": [{"idx": 0, "n_prompt": 1, "max_tokens": 1, "send_ns": 50}]},
               1: {"records": [{"idx": 0, "n_prompt": 1, "max_tokens": 1, "send_ns": 10},
                               {"idx": 1, "n_prompt": 1, "max_tokens": 1, "send_ns": 90}]}}
    merged = merge(results)
    assert [(r.idx, r.shard, r.send_ns) for r in merged] == [(0, 1, 10), (1, 0, 50), (2, 1, 90)]


def _serve(url: str, registry: str, *args: str) -> dict:
    return json.loads(pdx_here("serve-bench", "--backend", "openai", "--url", url, "-p", "16", "-n", "8",
                               "--registry", registry, "--json", *args))[0]


def test_two_clients_make_one_run_on_one_clock(fake_server, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    args = ("--request-rate", "40", "--num-requests", "60", "--seed", "7")
    one = _serve(fake_server, url, *args)
    two = _serve(fake_server, url, *args, "--clients", "2")
    (test1,), (test2,) = one["tests"], two["tests"]
    assert test2["status"] == "ok" and test2["spec"]["clients"] == 2 and "ray_address" not in test2["spec"]
    requests = test2["requests"]
    assert len(requests) == 60 and [r["idx"] for r in requests] == list(range(60))
    assert {r["shard"] for r in requests} == {0, 1} and {r["shard"] for r in test1["requests"]} == {None}
    # The same arrival process, whichever client sent each request: the schedules are equal.
    assert sorted(r["scheduled_ns"] for r in requests) == sorted(r["scheduled_ns"] for r in test1["requests"])
    clients = test2["samples"][0]["engine"]["clients"]
    slack = max(c["offset_uncertainty_ns"] for c in clients)
    assert [c["shard"] for c in clients] == [0, 1] and all(c["died"] is None and c["requests"] == 30 for c in clients)
    assert len({c["pid"] for c in clients}) == 2 and all(c["pid"] != os.getpid() for c in clients)
    for r in requests:  # the merged clock: nothing before its schedule (within the clocks' agreement) or its send
        assert r["send_ns"] - r["scheduled_ns"] >= -slack
        assert 0 <= r["first_ns"] <= r["end_ns"] and all(0 <= t <= r["end_ns"] for t, _ in r["events"])
    assert test2["stats"]["completed"] == 60 and test2["stats"]["clients"]["processes"] == 2
    shown = " ".join(pdx_here("show", two["id"], "--registry", url).split())
    assert "2 client processes (local, 1 host)" in shown
    assert redact_record(two)["tests"][0]["samples"][0]["engine"]["clients"][0]["host"] == HOST_MARK


def _workers_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"pdx.base.workers" in cmdline:
                found.append(int(entry.name))
    return found


def test_a_client_that_dies_costs_its_requests_and_the_run_says_which(fake_server, tmp_path):
    """The first test's shard 0 is killed once the shards' requests are being served; its requests are
    gone, shard 1's are kept, the test fails naming the shard, and the second test (fresh clients)
    completes: the run is partial. The kill waits on the server's count of tokens sent, not on a clock:
    on a loaded machine a worker takes a while to start, and one killed while its clock was being read
    would be a different failure."""
    import requests

    killed = []

    def tokens_sent() -> int:
        return sum(len(times) for times in requests.get(f"{fake_server}/sends", timeout=10).json().values())

    def kill_one() -> None:
        deadline = time.monotonic() + 60
        found, before = [], 0
        while time.monotonic() < deadline:
            if len(found) < 2:
                found = _workers_of(os.getpid())
                before = tokens_sent()  # the warm-up's requests are done before the shards start
            elif tokens_sent() >= before + 5 * 8:  # about five of the shards' requests of 8 tokens each
                os.kill(min(found), 9)
                killed.append(min(found))
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one)
    killer.start()
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    result = run_pdx_here("serve-bench", "--backend", "openai", "--url", fake_server, "-p", "16", "-n", "8",
                          "--request-rate", "20,21", "--duration", "3", "--clients", "2", "--registry", url, "--json")
    killer.join()
    assert killed and result.returncode == 1, result.stderr
    run = json.loads(result.stdout)[0]
    first, second = run["tests"]
    assert run["status"] == "partial" and first["status"] == "failed" and second["status"] == "ok"
    assert f"1 of 2 client shards died (shard 0 (local, pid {killed[0]}): " in first["error"]
    kept = first["requests"]
    assert kept and {r["shard"] for r in kept} == {1} and len({r["idx"] for r in kept}) == len(kept)
    assert len(kept) < 20 * 3  # shard 1's half of about sixty arrivals, nothing twice


@pytest.mark.parametrize("args, message", [
    (("--scenario", "stall", "--clients", "2"), "--clients and --ray split load and sweep tests; a stall test"),
    (("-c", "1", "--clients", "2", "--num-requests", "4"), "each client needs a request in flight; the cap is 1"),
    (("--clients", "0", "-c", "2"), "--clients"),
])
def test_what_cannot_be_split_is_refused_in_one_line(fake_server, args, message):
    result = run_pdx_here("serve-bench", "--backend", "openai", "--url", fake_server, *args)
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") <= 3, result.stderr


def test_a_client_past_its_limit_is_said_in_one_line_and_a_quiet_one_is_not():
    from pdx.reports import figures
    from pdx.domain.serving.analysis import client_stats

    def notes(client: dict) -> list:
        test = {"name": "r400", "kind": "serve", "spec": {}, "requests": [],
                "samples": [{"ns": 10**9, "engine": {"client": client}}]}
        stats = {"clients": client_stats(test["samples"])}
        return [n for n in figures.serving_notes(dict(test, stats=stats)) if n.topic == "clients"]

    busy = notes({"cpu_s": 9.5, "cores": 0.95, "late_p99_ms": 0.2})
    late = notes({"cpu_s": 2.0, "cores": 0.2, "late_p99_ms": 3.5})
    assert len(busy) == 1 and busy[0].warn and "used 0.95 of its core" in busy[0].text and "--clients N" in busy[0].text
    assert len(late) == 1 and "ran its schedule 3.50 ms late at p99" in late[0].text
    assert notes({"cpu_s": 0.2, "cores": 0.02, "late_p99_ms": 0.05}) == []


def test_ray_with_one_client_says_it_is_ignored(fake_server, tmp_path):
    """`--ray` without `--clients N`: the test runs in this process, and stderr says so at the start."""
    result = run_pdx_here("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-o", "model_name=fake",
                          "-c", "1", "-p", "8", "-n", "2", "--num-requests", "2", "--ray", "auto",
                          "--registry", f"sqlite:///{tmp_path / 'r.sqlite'}")
    assert result.returncode == 0, result.stderr
    (said,) = [line for line in result.stderr.splitlines() if line.startswith("--ray")]
    assert said == ("--ray: ignored with one client: the test runs in this process; give --clients N (2 or more) "
                    "to spread it over the cluster's nodes")


def test_ray_without_ray_installed_is_refused_before_any_run(fake_server, tmp_path):
    """`--clients 2 --ray auto` where Ray is not installed (as here): one line before the run, no run stored
    (it was a failed run in the registry)."""
    import importlib.util

    if importlib.util.find_spec("ray") is not None:
        pytest.skip("Ray is installed here")
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    result = run_pdx_here("serve-bench", "--backend", "openai", "--url", fake_server, "-c", "2", "--clients", "2",
                          "--num-requests", "4", "--ray", "auto", "--registry", url)
    assert_one_line_error(result, "--ray needs Ray")
    assert "no runs" in run_pdx_here("runs", "--registry", url).stdout
