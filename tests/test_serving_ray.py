"""serve-bench's clients as Ray actors (issue 30) on a real local Ray cluster (``ray start --head`` on
loopback, stopped after) against a real llama-server on a tiny synthetic model: a rate sweep from two
actors agrees with the same sweep from one process, within the spread of running each twice, and the
merged run keeps the schedule on one clock. Runs in tox -e ray, which installs pdx[ray]."""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from pdx.domain.synth import get_shape, write_gguf

from conftest import run_pdx

pytestmark = pytest.mark.ray

SWEEP = ("--request-rate", "2,4", "--num-requests", "12", "-p", "32", "-n", "8", "--saturation-window", "0",
         "--server-args", "-c 2048 -np 2")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A one-node Ray cluster on loopback; its address for RAY_ADDRESS."""
    ray = Path(sys.executable).with_name("ray")
    port = _free_port()
    temp = Path(f"/tmp/pdx-ray-{os.getpid()}")  # Ray's socket paths must stay short
    started = subprocess.run([str(ray), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                              "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
                              f"--temp-dir={temp}"], capture_output=True, text=True, timeout=180)
    assert started.returncode == 0, started.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(ray), "stop", "--force"], capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    return str(write_gguf(get_shape("tiny"), "f16", tmp_path_factory.mktemp("ray") / "tiny-f16.gguf"))


def _sweep(registry_url: str, model: str, *extra: str, env: dict | None = None) -> dict:
    result = run_pdx("serve-bench", "--backend", "llamacpp-server", "-m", model, "--registry", registry_url, "--json",
                     *SWEEP, *extra, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]


def _agree(one: list[float], two: list[float], what: str) -> None:
    """Two configurations' figures, each measured twice: their means differ by no more than twice the larger
    run-to-run spread (floored at a quarter of the value and a millisecond: two runs may agree by chance)."""
    spread = max(max(one) - min(one), max(two) - min(two), 0.25 * statistics.mean(one), 1.0)
    assert abs(statistics.mean(one) - statistics.mean(two)) <= 2 * spread, (what, one, two)


def test_a_sweep_from_two_ray_actors_agrees_with_one_process(ray_cluster, small_model, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    env = dict(os.environ, RAY_ADDRESS=ray_cluster)
    alone, actors = [], []
    for _ in range(2):  # interleaved, so that a machine's drift falls on both sides alike
        alone.append(_sweep(url, small_model))
        actors.append(_sweep(url, small_model, "--clients", "2", "--ray", "auto", env=env))
    for index in range(2):  # each rate of the sweep
        tests = [run["tests"][index] for run in alone + actors]
        assert all(t["status"] == "ok" for t in tests), [t["error"] for t in tests]
        assert {t["stats"]["completed"] for t in tests} == {12}
        assert {(t["stats"]["prompt_tokens"], t["stats"]["output_tokens"]) for t in tests} == {(12 * 32, 12 * 8)}
        for key in ("ttft_ms", "itl_ms"):
            _agree([t["stats"][key]["median"] for t in tests[:2]], [t["stats"][key]["median"] for t in tests[2:]],
                   f"rate {index}: {key}")
    for run in actors:
        for test in run["tests"]:
            clients = test["samples"][0]["engine"]["clients"]
            assert [c["pool"] for c in clients] == ["ray", "ray"] and all(c["node"] and c["pid"] for c in clients)
            assert {r["shard"] for r in test["requests"]} == {0, 1} and test["spec"]["client_pool"] == "ray"
            slack = max(c["offset_uncertainty_ns"] for c in clients)
            for r in test["requests"]:  # one clock: nothing before its schedule (within the clocks' agreement)
                assert r["send_ns"] - r["scheduled_ns"] >= -slack and 0 <= r["first_ns"] <= r["end_ns"]
            # The arrivals are the one process's, whoever sent them.
            twin = next(t for t in alone[0]["tests"] if t["name"] == test["name"])
            assert sorted(r["scheduled_ns"] for r in test["requests"]) == sorted(
                r["scheduled_ns"] for r in twin["requests"])
