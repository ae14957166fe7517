"""Shared fixtures: a private data dir per test (so no test sees another's
registry), registries on every database pdx supports, and helpers to run the
real ``pdx`` command.

With ``PDX_TEST_POSTGRES=1`` (tox -e postgres) a throwaway PostgreSQL cluster
is started on a loopback port for the session (tests/postgres/pg.sh), and
every test that takes ``registry_url`` runs against it too, on a database of
its own, as well as against SQLite.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the plugin guide's venv runs pdx's contract suite from here with pytest and pdx alone
    settings = None
if settings is not None:
    # No property test is about speed, and the suite runs on busy two-core machines: one example stalled
    # past hypothesis's 200 ms deadline, then replayed fast, fails as "unreliable timings". Tests still set
    # their own example counts; a test that sets a deadline of its own keeps it.
    settings.register_profile("pdx", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("pdx")

PG_SCRIPT = Path(__file__).parent / "postgres" / "pg.sh"
DATABASES = ["sqlite"] + (["postgresql"] if os.environ.get("PDX_TEST_POSTGRES") else [])


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PDX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("PDX_REGISTRY", raising=False)
    return tmp_path / "data"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_server():
    """Base URL of a PostgreSQL cluster that lives as long as the test session."""
    folder, port = tempfile.mkdtemp(prefix="pdx-pg-"), _free_port()
    subprocess.run(["sh", str(PG_SCRIPT), "start", folder, str(port)], check=True, timeout=120)
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(["sh", str(PG_SCRIPT), "stop", folder], check=False, timeout=120)


def _admin(base: str, sql: str) -> None:
    import psycopg

    plain = base.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(f"{plain}/postgres", autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture
def postgres_url(request):
    """A fresh, empty PostgreSQL database (dropped afterwards)."""
    base = request.getfixturevalue("postgres_server")
    name = f"pdx_{uuid.uuid4().hex[:12]}"
    _admin(base, f"CREATE DATABASE {name}")
    yield f"{base}/{name}"
    _admin(base, f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=[pytest.param(db, marks=[pytest.mark.postgres] if db == "postgresql" else [])
                        for db in DATABASES])
def registry_url(request, tmp_path) -> str:
    """An empty registry URL: a SQLite file, and a PostgreSQL database under PDX_TEST_POSTGRES."""
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_url")
    return f"sqlite:///{tmp_path / 'registry.sqlite'}"


@functools.lru_cache(maxsize=1)
def _cli():
    from pdx.cli import build_cli

    return build_cli()


def pdx_here(*args: str) -> str:
    """Run the real CLI in this process (no interpreter start-up: for tests that call it
    many times) and return its stdout; it must succeed."""
    from click.testing import CliRunner

    result = CliRunner().invoke(_cli(), list(args), prog_name="pdx")
    assert result.exit_code == 0, f"pdx {' '.join(args)}: {result.output} {result.exception!r}"
    return result.stdout


def pdx_import(registry_url: str, path, *args: str) -> dict:
    """``pdx import PATH --json`` into ``registry_url``, in this process: what was added and skipped."""
    return json.loads(pdx_here("import", str(path), "--registry", registry_url, "--json", *args))


def show(registry_url: str, run_id: str) -> dict:
    """``pdx show RUN --json``, in this process."""
    return json.loads(pdx_here("show", run_id, "--registry", registry_url, "--json"))


def run_pdx_here(*args: str) -> subprocess.CompletedProcess:
    """Run the CLI's own entry point (its error handling included) in this process, as
    :func:`run_pdx` would in a fresh one; for tests of many one-line errors."""
    import contextlib
    import io

    from pdx.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code or 0
    return subprocess.CompletedProcess(["pdx", *args], code, out.getvalue(), err.getvalue())


def run_pdx(*args: str, timeout: float = 600, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    """Run the real CLI in a fresh interpreter, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "pdx", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        **kwargs,
    )


def assert_one_line_error(result: subprocess.CompletedProcess, *needles: str) -> str:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("pdx: error: "), line
    for needle in needles:
        assert needle in line, line
    return line


def timed_or_burst(test: dict) -> bool:
    """Whether a stored server test was timed (True), or refused only because the server streamed its
    tokens in one burst (False): a server or client held up by other work on the machine can send or
    read every token at once, and pdx rightly refuses to time that. Either way every request it stored
    must be whole, exactly the tokens asked for."""
    requests = test["requests"]
    assert requests and all(r["status"] == "ok" and r["n_gen"] == r["max_tokens"] for r in requests), \
        test["error"] or [r["error"] for r in requests]
    if test["status"] == "ok":
        return True
    assert test["status"] == "failed" and "\n" not in test["error"], test["error"]
    return False


def assert_judged_with_the_window(run: dict, shape, window: int = 64) -> None:
    """A run of a sliding-window shape, judged by ceilings whose KV cache caps the sliding layers at
    the window and whose weights are the active ones: every measured test has a fraction, flagged
    where above 1 (a probe cached on a busy machine can sit below a quiet run), and each decode
    step reads the weights of its batch and the KV of its context."""
    from pdx.domain import ceilings

    figures = ceilings.model_figures(run["model"])
    assert (figures.kv.sliding_window, figures.kv.n_sliding_layers) == (window, shape.n_sliding_layers)
    assert figures.active_params == shape.active_params and figures.n_experts == shape.n_experts
    for test in run["tests"]:
        record = test["ceilings"]
        assert test["stats"]["rate"]["mean"] > 0 and record["fraction"] > 0
        assert record["above_ceiling"] == (record["fraction"] > 1)
        decode = record["phases"].get("decode")
        if decode:
            b = test["batch"]
            kv = figures.kv_bytes_at(decode["context"])
            assert decode["bytes_per_token"] == pytest.approx((figures.weight_bytes(b) + b * kv) / b)


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    from pdx.domain.synth import get_shape, write_gguf

    return write_gguf(get_shape("tiny"), "f16", tmp_path_factory.mktemp("models") / "tiny-f16.gguf")


FAKE_SERVER = Path(__file__).with_name("fake_openai_server.py")


@pytest.fixture(scope="session")
def fake_server():
    """tests/fake_openai_server.py in its own process; yields its base URL."""
    proc = subprocess.Popen([sys.executable, str(FAKE_SERVER), "--ttft", "0.05", "--itl", "0.01"],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split()[1])
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
