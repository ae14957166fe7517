"""Shared fixtures: a private data dir per test (so no test sees another's
registry) and helpers to run the real ``pdx`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PDX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("PDX_REGISTRY", raising=False)
    return tmp_path / "data"


@pytest.fixture
def registry_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'registry.sqlite'}"


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


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    from pdx.synth import get_shape, write_gguf

    return write_gguf(get_shape("tiny"), "f16", tmp_path_factory.mktemp("models") / "tiny-f16.gguf")
