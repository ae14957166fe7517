"""Bad input: one line on stderr naming the problem and the fix, a non-zero
exit, no traceback (and nothing written to the registry)."""

import pytest

from conftest import assert_one_line_error, run_pdx


@pytest.fixture
def no_engine(tmp_path, monkeypatch):
    """A machine without llama.cpp: an empty pdx cache and no llama-bench on PATH (and MLX, where
    installed, left out, as it would otherwise be the default backend)."""
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PDX_DISABLE_PLUGINS", "mlx")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("LLAMA_CPP_LIB_PATH", raising=False)
    monkeypatch.delenv("PDX_LLAMA_BENCH", raising=False)


@pytest.mark.parametrize(
    "args, needles",
    [
        (["-p", "abc"], ["-p: 'abc' is not a non-negative number"]),
        (["-n", "-1"], ["-n: '-1'"]),
        (["-d", "5-1"], ["-d: range '5-1' never reaches its end"]),
        (["-p", "0", "-n", "0"], ["no tests selected"]),
        (["-b", "0"], ["-b: 0 is below the minimum of 1"]),
        (["-r", "0"], ["--repetitions", "is not a count of at least 1 or 'auto'"]),
        (["--target-ci", "x%"], ["--target-ci", "not a percentage"]),
        (["-r", "auto", "--max-repetitions", "2"], ["--max-repetitions 2 is below -r 3"]),
        (["-o", "novalue"], ["is not KEY=VALUE"]),
        (["--no-such-flag"], ["No such option"]),
    ],
)
def test_invalid_test_specs(args, needles, registry_url):
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, *args), *needles)


def test_wrong_model_path(registry_url, tmp_path):
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "-m", str(tmp_path / "missing.gguf")),
                          "model not found", "missing.gguf")


def test_file_that_is_not_gguf(registry_url, tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\x00" * 64)
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "-m", str(path)), "is not a GGUF file")


def test_unknown_backend(registry_url, tiny_gguf):
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "--backend", "nope", "-m", str(tiny_gguf)),
                          "unknown backend 'nope'", "llamacpp")


def test_missing_engine(registry_url, tiny_gguf, no_engine):
    line = assert_one_line_error(
        run_pdx("bench", "--registry", registry_url, "--backend", "llamacpp-bench", "-m", str(tiny_gguf)),
        "backend llamacpp-bench is not available", "pdx llamacpp install",
    )
    assert "llama-bench" in line
    assert_one_line_error(run_pdx("bench", "--registry", registry_url), "no backend is available")
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "--llama-bench", "/no/llama-bench"),
                          "no executable llama-bench")


def test_backends_says_why_and_how(no_engine):
    result = run_pdx("backends")
    assert result.returncode == 0
    assert "unavailable" in result.stdout and "pdx llamacpp install" in result.stdout


def test_unknown_run(registry_url):
    assert_one_line_error(run_pdx("show", "abcdef", "--registry", registry_url), "no run 'abcdef'")
    empty = run_pdx("runs", "--registry", registry_url)
    assert empty.returncode == 0 and "no runs" in empty.stdout


def test_version_and_help():
    assert run_pdx("--version").stdout.startswith("pdx, version ")
    help_text = run_pdx("bench", "--help").stdout
    for flag in ("-p, --n-prompt", "-n, --n-gen", "-d, --n-depth", "-b, --batch", "--llama-bench", "--registry"):
        assert flag in help_text
