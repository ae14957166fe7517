"""The MLX backend, for real: mlx-lm on MLX's Linux CPU backend (tox -e mlx
installs mlx-lm[cpu]), on float32 synthetic models (MLX's CPU backend
emulates float16 and quantised kernels, 10-50x slower). Metal cannot exist
here; the Mac side (the chip from sysctl, its ceiling) is tested on recorded
sysctl output in tests/test_hardware_detect.py."""

import http.server
import json
import shutil
import subprocess
import sys
import threading

import pytest

from pdx.reports.sample_compare import compare_runs

from conftest import assert_one_line_error, run_pdx

pytestmark = pytest.mark.mlx
TINY = "synth:tiny:f32"


def bench_json(*args: str, env: dict | None = None) -> list[dict]:
    result = run_pdx("bench", "--json", *args, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    from pdx.domain.synth import get_shape, write_hf

    return write_hf(get_shape("tiny"), "float32", tmp_path_factory.mktemp("models") / "tiny-f32")


def test_pp_and_tg_at_two_depths_and_batches_with_mlx_lm_figures_beside(registry_url, tiny_hf):
    (run,) = bench_json("--registry", registry_url, "--backend", "mlx", "-m", str(tiny_hf),
                        "-p", "64", "-n", "16", "-d", "0,64", "-b", "1,4", "-r", "2")
    assert run["status"] == "complete" and run["backend"] == "mlx"
    tests = {t["name"]: t for t in run["tests"]}
    assert list(tests) == ["pp64", "tg16", "pp64@d64", "tg16@d64", "pp64/b4", "tg16/b4", "pp64@d64/b4", "tg16@d64/b4"]
    weights = run["model"]["file_bytes"] // 2  # the safetensors file, give or take the tokenizer
    for name, test in tests.items():
        assert test["status"] == "ok" and len(test["samples"]) == 2, name
        # The KV cache holds exactly depth + the test's tokens afterwards: every step ran, no EOS stop.
        assert all(s["engine"]["kv_offset"] == test["depth"] + test["n_prompt"] + test["n_gen"]
                   for s in test["samples"]), name
        assert test["engine"]["peak_memory_bytes"] > weights
        mlx_lm, own = test["engine"]["mlx_lm"], test["engine"]["own_rates"]
        batch = test["batch"]
        assert mlx_lm["function"] == ("stream_generate" if batch == 1 else "batch_generate")
        if test["kind"] == "pp":
            # batch_generate counts each sequence's last prompt token as generation work
            assert mlx_lm["runs"][0]["prompt_tokens"] == (64 if batch == 1 else batch * 63)
            assert own == {"label": "mlx-lm", "pp": mlx_lm["prompt_tps"]} and own["pp"] > 0
        else:
            assert mlx_lm["runs"][0]["generation_tokens"] == 16 * batch  # EOS disabled in mlx-lm's loop too
            assert own == {"label": "mlx-lm", "tg": mlx_lm["generation_tps"]} and own["tg"] > 0
    stats = tests["tg16/b4"]["stats"]
    assert stats["per_sequence_rate"] == pytest.approx(stats["rate"]["mean"] / 4)
    engine = run["engine"]
    assert engine["name"] == "MLX" and engine["version"] and engine["settings"]["mlx_lm"]
    assert engine["settings"]["device"] == "cpu" and engine["details"]["device_info"]["device_name"]
    assert run["environment"]["packages"]["mlx"] == engine["version"]
    assert run["ceiling_basis"]["source"] == "probe"  # the CPU here: judged by its probes
    assert run["ceiling_basis"]["probe"]["device"] == "mlx:cpu"  # ... measured through MLX itself
    assert set(run["ceiling_basis"]["probe"]["matmul"]) == {"f16", "bf16", "f32", "q8", "q4"}
    # Wide enough that a rate's notes (on a busy machine: noise and other processes) never wrap mid-phrase.
    shown = run_pdx("show", run["id"], "--registry", registry_url, env={"COLUMNS": "400"}).stdout
    assert "mlx-lm's own: pp " in shown and "mlx-lm's own: tg " in shown  # in the notes column


def test_the_same_shape_on_mlx_and_llama_cpp_compares_row_by_row(registry_url):
    mlx, llama = bench_json("--registry", registry_url, "--backend", "mlx,llamacpp", "-m", TINY,
                            "-p", "64", "-n", "16", "-r", "3")
    assert (mlx["backend"], llama["backend"]) == ("mlx", "llamacpp")
    assert (mlx["model"]["format"], llama["model"]["format"]) == ("hf", "gguf")
    for key in ("synthetic", "n_params", "n_layers", "n_embd", "n_vocab"):
        assert mlx["model"][key] == llama["model"][key], key
    assert mlx["model"]["dtype"].lower() == llama["model"]["dtype"].lower() == "f32"
    rows = compare_runs(llama, mlx)
    assert [r.name for r in rows] == ["pp64", "tg16"]
    assert all(r.mark != "x" and r.base_rate > 0 and r.new_rate > 0 for r in rows)


def test_adaptive_repetitions_keep_one_record_of_mlx_lm(registry_url, tiny_hf):
    (run,) = bench_json("--registry", registry_url, "--backend", "mlx", "-m", str(tiny_hf), "-p", "0", "-n", "8",
                        "-r", "2", "--target-ci", "0.01%", "--max-repetitions", "4", "-o", "mlx_lm_runs=2")
    (test,) = run["tests"]
    assert len(test["samples"]) == 4 and test["adaptive"]["stopped_by"] == "cap"
    assert len(test["engine"]["mlx_lm"]["runs"]) == 2


def test_mlx_quantised_forms_load_as_mlx_lm_quantised_layers(tmp_path):
    import mlx.core as mx
    from mlx_lm import load

    from pdx.domain.synth import get_shape, write_hf

    for dtype, bits in (("mlx-q4", 4), ("mlx-q8", 8)):
        model, _ = load(str(write_hf(get_shape("tiny"), dtype, tmp_path / dtype)))
        layer = model.model.layers[0].mlp.down_proj
        assert type(layer).__name__ == "QuantizedLinear" and (layer.bits, layer.group_size) == (bits, 64)
        assert type(model.model.embed_tokens).__name__ == "QuantizedEmbedding"
        logits = model(mx.array([[5, 6, 7]]))
        assert logits.shape == (1, 3, 1024) and mx.isfinite(logits).all().item()


def test_model_errors_are_one_line(registry_url, tmp_path, tiny_hf):
    foreign = tmp_path / "foreign"
    shutil.copytree(tiny_hf, foreign)
    config = json.loads((foreign / "config.json").read_text())
    (foreign / "config.json").write_text(json.dumps(config | {"model_type": "no-such-arch"}))
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "--backend", "mlx", "-m", str(foreign)),
                          "mlx-lm cannot load", "no-such-arch not supported", "architecture mlx-lm supports")
    (tmp_path / "empty").mkdir()
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "--backend", "mlx", "-m",
                                  str(tmp_path / "empty")), "without config.json", "Hugging Face model directory")
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "--backend", "mlx", "-m", "synth:tiny:f32",
                                  "-o", "prefill_step_size=0"), "-o prefill_step_size: '0' is too small", "at least 1")


@pytest.mark.skipif(sys.platform == "darwin", reason="a Mac has Metal")
def test_metal_asked_for_on_linux_is_one_line(registry_url):
    line = assert_one_line_error(run_pdx("bench", "--registry", registry_url, "--backend", "mlx", "-m", TINY,
                                         "-o", "device=gpu"), "backend mlx is not available", "MLX has no GPU")
    assert "Apple Silicon Mac" in line and "-o device=cpu" in line


class _Hub(http.server.BaseHTTPRequestHandler):
    """A stand-in Hugging Face Hub that knows no repo, and counts what asked it."""

    asked: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.asked.append(self.path)
        self.send_response(404)
        self.send_header("X-Error-Code", "RepoNotFound")
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "Repository not found"}')

    do_HEAD = do_CONNECT = do_GET  # CONNECT: an https request sent through the proxy variables

    def log_message(self, *args):
        pass


@pytest.fixture
def local_hub():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hub.asked = []
    url = f"http://127.0.0.1:{server.server_address[1]}"
    yield {"HF_ENDPOINT": url, "HF_HUB_OFFLINE": "0", "HTTP_PROXY": url, "HTTPS_PROXY": url, "NO_PROXY": ""}
    server.shutdown()


def test_a_repo_id_asks_the_hub_and_a_missing_path_asks_nothing(registry_url, local_hub, tmp_path):
    args = ("bench", "--registry", registry_url, "--backend", "mlx", "-p", "8", "-n", "0", "-r", "1")
    for missing in (str(tmp_path / "no-model"), "./no-model", "models/a/b"):
        assert_one_line_error(run_pdx(*args, "-m", missing, env=local_hub, cwd=tmp_path), "model not found")
    assert _Hub.asked == []
    assert_one_line_error(run_pdx(*args, "-m", "pdx-test/no-such-model", env=local_hub),
                          "pdx-test/no-such-model is not a path here nor a model on the Hugging Face Hub")
    assert any("pdx-test/no-such-model" in path for path in _Hub.asked)


def test_a_repo_id_in_the_hugging_face_cache_runs_offline(registry_url, tiny_hf, tmp_path):
    # The cache layout huggingface_hub documents: models--OWNER--NAME/{refs/main, snapshots/REVISION/...}.
    repo = tmp_path / "hf" / "hub" / "models--pdx-test--tiny-f32"
    revision = "0" * 40
    shutil.copytree(tiny_hf, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    (run,) = bench_json("--registry", registry_url, "--backend", "mlx", "-m", "pdx-test/tiny-f32",
                        "-p", "16", "-n", "4", "-r", "1", env=env)
    assert run["status"] == "complete" and run["model"]["name"] == "pdx-test/tiny-f32"
    assert run["model"]["extra"]["hub"] == {"repo_id": "pdx-test/tiny-f32", "revision": revision}
    assert_one_line_error(run_pdx("bench", "--registry", registry_url, "--backend", "mlx", "-m", "pdx-test/absent",
                                  env=env), "not a path here nor in the Hugging Face cache, and HF_HUB_OFFLINE is set")


def test_mlx_lm_benchmark_output_imports_beside_pdx_run(registry_url, tiny_hf, tmp_path):
    """The importer on a fresh recording of the real mlx_lm.benchmark (tests/data holds older ones)."""
    out = subprocess.run([sys.executable, "-m", "mlx_lm.benchmark", "--model", str(tiny_hf), "-p", "64", "-g", "16",
                          "-n", "2"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (tmp_path / "mlx.txt").write_text(out.stdout)
    done = json.loads(run_pdx("import", str(tmp_path / "mlx.txt"), "--model", str(tiny_hf), "--registry",
                              registry_url, "--json").stdout)
    imported = json.loads(run_pdx("show", done["added"][0], "--registry", registry_url, "--json").stdout)
    (measured,) = bench_json("--registry", registry_url, "--backend", "mlx", "-m", str(tiny_hf), "-p", "0", "-n", "0",
                             "-pg", "64,16", "-r", "2")
    assert imported["model"]["sha256"] == measured["model"]["sha256"]
    assert [t["name"] for t in imported["tests"]] == [t["name"] for t in measured["tests"]] == ["pp64+tg16"]
    assert measured["tests"][0]["stats"]["prompt_rate"]["mean"] > 0


def test_the_model_is_fed_the_prompt_streams_ids(tiny_hf):
    """What the MLX model is called with, array by array, is the prompt stream's: the ids every other
    backend is fed for the same seed and test (tests/test_prompt_stream.py)."""
    from pdx.contract.backend import BackendConfig
    from pdx.domain.models import identify
    from pdx.base.plugin_manager import get_backend
    from pdx.domain.prompt_stream import PromptStream
    from pdx.domain.workload import TestSpec

    model = identify(tiny_hf)
    backend = get_backend("mlx")(BackendConfig(threads=1, seed=11))
    backend.load(model)
    measure, fed = backend.measure, []
    real = measure.model

    def capturing(tokens, cache=None):
        fed.append(tokens.tolist())
        return real(tokens, cache=cache)

    measure.model = capturing
    stream = PromptStream(11, model.n_vocab)
    try:
        for test in (TestSpec(8, 3, 16, batch=2), TestSpec(0, 3, 16, batch=2)):
            fed.clear()
            measure.once(test)
            prompts = stream.next(test)
            # The depth (one prefill_step_size chunk here); a prompt but its last token, then its last; or a
            # tg's first token; then the decode steps, fed back their argmax (the model's own ids).
            timed = [[p[:-1] for p in prompts.prompts], [p[-1:] for p in prompts.prompts]] if test.n_prompt else \
                [[d[:1] for d in prompts.decode]]
            assert fed[:1 + len(timed)] == [[prompts.depth] * 2] + timed, test.name
            steps = fed[1 + len(timed):]
            assert len(steps) == (3 if test.n_prompt else 2) and all(len(s) == 2 and len(s[0]) == 1 for s in steps)
    finally:
        backend.close()
