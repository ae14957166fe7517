"""What an interruption leaves behind: a publish stopped by a full disk or by kill -9 can be published
again; a serve-bench killed with -9 has its run marked interrupted by the next command that opens the
registry; a server that accepts a request and never answers holds serve-bench for a time that follows
the request's length, not ten minutes. Servers here listen on the loopback address only."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import run_pdx, run_pdx_here
from runfactory import filled_registry


@pytest.fixture
def registry(tmp_path) -> str:
    return filled_registry(tmp_path, 1)


@pytest.fixture
def runs(registry) -> list[dict]:
    from pdx.registry import Registry
    from pdx.reports.results import read_runs

    return read_runs(Registry(registry), samples=True)


def _site_files(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*")
            if p.is_file() and not p.name.startswith(".pdx-")}


def _published_whole(site: Path, runs: list[dict]) -> None:
    """Published again, the site is what a build from scratch makes: no journal left, every file in its
    manifest, no file of the stopped build's that this one does not make."""
    from pdx.reports.site.builder import publish

    publish(runs, site)
    manifest = json.loads((site / "pdx-site.json").read_text())
    assert "complete" not in manifest and not (site / ".pdx-journal").exists()
    assert set(_site_files(site)) == set(manifest["files"]) | {"pdx-site.json"}
    fresh = site.with_name(site.name + "-fresh")
    publish(runs, fresh)
    assert _site_files(site) == _site_files(fresh)


class _FullDisk:
    """Every site file after the first ``after`` fails with ENOSPC, the manifest too: nothing more fits.
    (A file cut short by a full disk is the tmpfs test's, below.)"""

    def __init__(self, monkeypatch, after: int) -> None:
        from pdx.reports.site import writer

        self.left = after
        for name in ("_atomic_write", "_exclusive_write"):
            real = getattr(writer, name)
            monkeypatch.setattr(writer, name, self._wrap(real))

    def _wrap(self, real):
        def write(path, data):
            if self.left <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.left -= 1
            return real(path, data)
        return write


@pytest.mark.parametrize("after", [0, 12])
def test_a_publish_stopped_by_a_full_disk_can_be_published_again(runs, tmp_path, monkeypatch, after):
    from pdx.contract.errors import PdxError
    from pdx.reports.site.builder import publish

    site = tmp_path / "site"
    with monkeypatch.context() as patch:
        _FullDisk(patch, after)
        with pytest.raises(PdxError, match="No space left on device.*free some space and publish again"):
            publish(runs, site)
    marker = site / "pdx-site.json"
    assert not marker.exists() or json.loads(marker.read_text())["complete"] is False
    _published_whole(site, runs)


def test_a_publish_onto_a_real_full_file_system_can_be_published_again(runs, tmp_path):
    """A 200 kB tmpfs (root only): the site does not fit; once there is room, it is published whole."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    from pdx.contract.errors import PdxError
    from pdx.reports.site.builder import publish

    try:
        site = disk / "site"
        for _ in range(2):  # and again while it is still full: the same line, not "not pdx's"
            with pytest.raises(PdxError, match="No space left on device"):
                publish(runs, site)
        subprocess.run(["mount", "-o", "remount,size=50m", str(disk)], check=True)
        _published_whole(site, runs)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


KILL_AFTER = """
import os, signal, sys
from pdx.reports.site import writer
real, count = writer.SiteWriter._place, [0]
def place(self, *args, **kwargs):
    count[0] += 1
    if count[0] > int(sys.argv[1]):
        os.kill(os.getpid(), signal.SIGKILL)  # no finally, no abandon: as kill -9 from outside
    return real(self, *args, **kwargs)
writer.SiteWriter._place = place
from pdx.cli import main
main(sys.argv[2:])
"""


def test_a_publish_killed_with_9_can_be_published_again(registry, runs, tmp_path):
    site = tmp_path / "site"
    for after in (12, 4):  # into a new folder, then over the site a killed build left
        killed = subprocess.run([sys.executable, "-c", KILL_AFTER, str(after), "publish", str(site),
                                 "--registry", registry], capture_output=True, text=True, timeout=300)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert (site / ".pdx-journal").is_file() and not (site / "pdx-site.json").exists()
    _published_whole(site, runs)


class _Silent(BaseHTTPRequestHandler):
    """Answers what serve-bench asks before measuring; takes every completion request and never answers it."""

    received = None  # set per server: a completion request arrived

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "silent", "object": "model"}]}).encode() \
            if self.path == "/v1/models" else b"{}"
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.server.received.set()
        self.server.release.wait(300)  # silent until the test ends

    def log_message(self, *args):
        pass


@pytest.fixture
def silent_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Silent)
    server.daemon_threads = True
    server.received, server.release = threading.Event(), threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


def test_a_server_that_never_answers_holds_a_short_request_for_seconds(silent_server, tmp_path):
    from pdx.measure.serving.openai import TIMEOUT_BASE_S, default_timeout_s

    limit = default_timeout_s(1, 1)
    assert limit < 60 and TIMEOUT_BASE_S < limit
    registry = str(tmp_path / "r.sqlite")
    result = run_pdx("serve-bench", "--backend", "openai", "--url", f"http://127.0.0.1:{silent_server.server_port}",
                     "-p", "1", "-n", "1", "-c", "1", "--num-requests", "1", "--warmup-requests", "0",
                     "--registry", registry, "--json", timeout=limit + 90)
    assert silent_server.received.is_set() and result.returncode == 1, result.stderr
    run, = json.loads(result.stdout)
    test, = run["tests"]
    request, = test["requests"]
    assert test["status"] == "failed" and request["status"] == "error"
    assert f"timed out after {limit:.1f} s" in request["error"], request["error"]


def test_the_default_limit_follows_the_request_and_is_stated_in_the_help():
    from pdx.measure.serving.openai import default_timeout_s

    assert default_timeout_s(128, 32) < default_timeout_s(8192, 32) < default_timeout_s(8192, 1024)
    assert default_timeout_s(128, 32, in_flight=16) > default_timeout_s(128, 32)
    assert default_timeout_s(1, 1) < 600 < default_timeout_s(128, 1024)  # short: seconds; long: more than before
    text = " ".join(run_pdx_here("serve-bench", "--help").stdout.split())
    assert "10 s + 0.1 s per prompt token + 1 s per generated token, times the requests in flight" in text
    assert default_timeout_s(100, 10) == pytest.approx(10 + 0.1 * 100 + 1 * 10)


def test_a_serve_bench_killed_with_9_is_marked_interrupted_at_the_next_command(silent_server, tmp_path):
    registry = str(tmp_path / "r.sqlite")
    bench = subprocess.Popen([sys.executable, "-m", "pdx", "serve-bench", "--backend", "openai", "--url",
                              f"http://127.0.0.1:{silent_server.server_port}", "-p", "1", "-n", "4000",
                              "--num-requests", "1", "--warmup-requests", "0", "--registry", registry],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert silent_server.received.wait(120), "serve-bench sent no request"
        alive = run_pdx_here("runs", "--json", "--registry", registry)
        run, = json.loads(alive.stdout)
        assert run["status"] == "running"  # its process is alive: left as it is
        bench.send_signal(signal.SIGKILL)
        bench.wait(60)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait(60)
    assert bench.returncode == -signal.SIGKILL
    after = run_pdx_here("runs", "--json", "--registry", registry)
    run, = json.loads(after.stdout)
    assert run["status"] == "interrupted" and run["finished_at"]
    assert f"pid {bench.pid}" in run["error"] and "ended without finishing it" in run["error"]
    shown = json.loads(run_pdx_here("show", run["id"], "--json", "--registry", registry).stdout)
    assert shown["status"] == "interrupted"


def test_a_lease_of_another_machine_or_a_live_process_is_left_alone(tmp_path):
    from sqlalchemy import update

    from pdx.registry import Registry
    from pdx.registry.schema import RunLease

    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    store = Registry(url)
    from test_registry import make_start
    from pdx.domain.models import ModelInfo

    model = ModelInfo(path="/m.gguf", name="m", format="gguf", architecture="llama", n_params=1, dtype="f16",
                      n_layers=1, n_heads=1, n_kv_heads=1, head_dim=1, n_embd=1, n_ff=1, n_vocab=1, n_ctx_train=1,
                      file_bytes=1, sha256="a" * 64)
    mine, elsewhere = (store.start_run(make_start(model)) for _ in range(2))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with store.engine.begin() as conn:  # one lease elsewhere, one of a process that is gone
        conn.execute(update(RunLease).where(RunLease.run_id == elsewhere).values(host="another-machine", pid=1))
        conn.execute(update(RunLease).where(RunLease.run_id == mine).values(pid=int(dead.stdout)))
    again = Registry(url)
    assert again.reaped == [mine]
    status = {r["id"]: r["status"] for r in again.runs()}
    assert status == {mine: "interrupted", elsewhere: "running"}
    store.finish_run(elsewhere, "complete")  # a finished run gives its lease back
    with store.engine.connect() as conn:
        assert conn.execute(RunLease.__table__.select()).fetchall() == []
