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


def test_each_llamacpp_backend_has_its_own_install_hint(no_engine):
    """Only the llama-bench backends take --llama-bench; llama-server's and the bindings' hints say their own way."""
    installs = {}
    name = None
    for line in run_pdx("backends").stdout.splitlines():
        if not line.startswith(" "):
            name = line.split()[0]
        elif line.strip().startswith("install:"):
            installs[name] = line.strip()
    assert "--llama-bench" in installs["llamacpp-bench"] and "--llama-bench" in installs["llamacpp"]
    assert "--llama-bench" not in installs["llamacpp-server"] and "PDX_LLAMA_SERVER" in installs["llamacpp-server"]
    assert "--llama-bench" not in installs["llamacpp-python"]
    assert "llama-cpp-python bindings" in installs["llamacpp-python"]


def test_unknown_run(registry_url):
    assert_one_line_error(run_pdx("show", "abcdef", "--registry", registry_url), "no run 'abcdef'")
    empty = run_pdx("runs", "--registry", registry_url)
    assert empty.returncode == 0 and "no runs" in empty.stdout


def test_version_and_help():
    assert run_pdx("--version").stdout.startswith("pdx, version ")
    help_text = run_pdx("bench", "--help").stdout
    for flag in ("-p, --n-prompt", "-n, --n-gen", "-d, --n-depth", "-b, --batch", "--llama-bench", "--registry"):
        assert flag in help_text


# Every numeric option goes through pdx.contract.numbers: NaN, infinities, non-ASCII digits and absurd
# magnitudes are one line naming the option, and never reach an engine or the registry.
NUMERIC = [
    (["bench", "-p", "²"], ["-p: '²' is not a non-negative number"]),
    (["bench", "-p", "99999999999999999999999"], ["-p:", "above the maximum"]),
    (["bench", "-b", "1e12"], ["-b: '1e12'"]),
    (["bench", "-b", "1000000000000"], ["-b:", "above the maximum"]),
    (["bench", "-d", "٣"], ["-d:"]),
    (["bench", "-t", "99999999"], ["-t:", "above the maximum"]),
    (["bench", "-r", "²"], ["--repetitions"]),
    (["bench", "-r", "99999999999999999999999"], ["--repetitions"]),
    (["bench", "--seed", "99999999999999999999999"], ["--seed", "too large"]),
    (["bench", "--warmup", "nan"], ["--warmup", "not a whole number"]),
    (["bench", "--target-ci", "nan"], ["--target-ci", "not a percentage"]),
    (["bench", "--target-ci", "inf%"], ["--target-ci", "not a percentage"]),
    (["check", "--factor", "nan"], ["--factor", "not a number"]),
    (["check", "--factor", "inf"], ["--factor", "not a number"]),
    (["check", "--factor", "1e400"], ["--factor", "not a finite number"]),
    (["check", "--alpha", "1"], ["--alpha", "below 1"]),
    (["ceiling", "--bandwidth", "1e400GB/s", "--model-bytes", "1GB", "--params", "7B"], ["--bandwidth", "not a finite "
                                                                                         "number"]),
    (["ceiling", "--bandwidth", "1e300TB/s", "--model-bytes", "1GB", "--params", "7B"], ["--bandwidth", "too large"]),
    (["ceiling", "--bandwidth", "400GB/s", "--model-bytes", "1GB", "--measured", "nan"], ["--measured"]),
    (["ceiling", "--bandwidth", "400GB/s", "--model-bytes", "1GB", "--measured", "-inf"], ["--measured"]),
    (["ceiling", "--bandwidth", "４00GB/s", "--model-bytes", "1GB", "--params", "7B"], ["--bandwidth", "cannot read"]),
    (["ceiling", "--bandwidth", "400GB/s", "--model-bytes", "1GB", "--params", "7e400B"], ["--params", "not a finite "
                                                                                           "number"]),
    (["kv", "--n-layers", "2.5", "--n-kv-heads", "8", "--head-dim", "64"], ["--n-layers", "not a whole number"]),
    (["runs", "--limit", "²"], ["--limit", "not a whole number"]),
    (["model", "synth", "--n-layers", "99999999999999999999999"], ["--n-layers", "too large"]),
    (["serve-bench", "--backend", "openai", "--burstiness", "nan"], ["--burstiness"]),
    (["serve-bench", "--backend", "openai", "--request-rate", "nan"], ["--request-rate"]),
    (["serve-bench", "--backend", "openai", "-p", "99999999999"], ["--input-len", "too large"]),
    (["hw", "probe", "-t", "1e3"], ["--threads"]),
]


@pytest.mark.parametrize("args, needles", NUMERIC, ids=[" ".join(a) for a, _ in NUMERIC])
def test_numeric_options_refuse_what_is_no_number(args, needles, tmp_path):
    from conftest import run_pdx_here

    registry = tmp_path / "r.sqlite"
    assert_one_line_error(run_pdx_here(*args, *(["--registry", str(registry)] if args[0] in
                                                ("bench", "check", "runs", "serve-bench") else [])), *needles)
    assert not registry.exists() or not _runs(registry)


def _runs(registry) -> list:
    import json

    from conftest import pdx_here

    return json.loads(pdx_here("runs", "--registry", str(registry), "--json"))


@pytest.mark.parametrize("name, content, needle", [
    ("array.json", "[1, 2]", "a config.json is a JSON object, not a list"),
    ("huge.json", '{"num_hidden_layers": 1e400, "num_attention_heads": 8, "hidden_size": 512}', "layers: 'inf'"),
    ("half.json", '{"num_hidden_layers": 2.5, "num_attention_heads": 8, "hidden_size": 512}', "layers: '2.5'"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "cannot read"),
])
def test_kv_config_files_with_no_shape_are_one_line(name, content, needle, tmp_path):
    from conftest import run_pdx_here

    (tmp_path / name).write_text(content)
    assert_one_line_error(run_pdx_here("kv", "--config", str(tmp_path / name)), needle)


def test_paths_and_urls_that_cannot_work_are_one_line(tmp_path):
    from conftest import pdx_here, run_pdx_here

    from test_importers import DATA

    registry = str(tmp_path / "r.sqlite")
    assert_one_line_error(run_pdx_here("runs", "--registry", "postgresql+psycopg://u@localhost:notaport/db"),
                          "cannot use registry URL", "notaport")
    pdx_here("import", str(DATA / "vllm_bench_serve_summary.json"), "--registry", registry)
    assert_one_line_error(run_pdx_here("export", "-o", "/", "--registry", registry), "cannot write /", "folder")
    assert_one_line_error(run_pdx_here("export", "-o", str(tmp_path), "--registry", registry), "folder")
    assert_one_line_error(run_pdx_here("model", "synth", "--shape", "tiny", "-o", str(tmp_path)), "is a folder")
    assert_one_line_error(run_pdx_here("model", "synth", "--shape", "tiny", "--format", "hf", "-o", registry),
                          "is a file")
    assert_one_line_error(run_pdx_here("import", str(DATA / "vllm_bench_serve_summary.json"), "--format", "bundle",
                                       "--registry", registry), "not a pdx bundle")


def test_id_prefixes_are_not_like_patterns(tmp_path):
    """``pdx show 6%%%`` must not match a run whose id starts with 6: % and _ are literal."""
    import json

    from conftest import pdx_here, run_pdx_here

    from test_importers import DATA

    registry = str(tmp_path / "r.sqlite")
    run_id = json.loads(pdx_here("import", str(DATA / "vllm_bench_serve_summary.json"), "--registry", registry,
                                 "--json"))["added"][0]
    for pattern in (f"{run_id[0]}%%%", f"{run_id[:2]}__", "%%%%", "____"):
        assert_one_line_error(run_pdx_here("show", pattern, "--registry", registry), "no run")
    assert json.loads(pdx_here("show", run_id[:6], "--registry", registry, "--json"))["id"] == run_id
    from pdx.registry import Registry

    store = Registry(registry)
    assert store.run_ids(model="%") == [] and store.run_ids(hardware="_") == [] and store.run_ids(model="") != []
