"""Importer input hardening (issue 13): a damaged field of another tool's file is a
one-line error naming it, never a traceback, and nothing is stored; any mutation
of a recorded file either imports into records that read back exactly or is such
an error (hypothesis)."""

import copy
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import assert_one_line_error, pdx_here, run_pdx_here

DATA = Path(__file__).parent / "data"
VLLM = json.loads((DATA / "vllm_bench_serve_detailed.json").read_text())
# One llama-bench record, as its JSON output writes them (the recorded files hold more of these).
LLAMA_BENCH = {
    "build_commit": "0c1e570", "build_number": 1, "cpu_info": "Intel(R) Xeon(R) Platinum 8480+", "gpu_info": "",
    "backends": "CPU", "model_filename": "/models/tiny.gguf", "model_type": "llama ?B F16", "model_size": 8523776,
    "model_n_params": 4261888, "n_batch": 2048, "n_ubatch": 512, "n_threads": 2, "type_k": "f16", "type_v": "f16",
    "n_gpu_layers": 0, "flash_attn": False, "repack": True, "n_prompt": 16, "n_gen": 0, "n_depth": 0,
    "test_time": "2026-12-01T09:00:00Z", "avg_ns": 2000000, "stddev_ns": 100000, "avg_ts": 8000.0,
    "stddev_ts": 400.0, "samples_ns": [1900000, 2000000, 2100000], "samples_ts": [8421.05, 8000.0, 7619.05],
}


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _refused(url, path, *needles, args=()):
    result = run_pdx_here("import", str(path), "--registry", url, *args)
    assert_one_line_error(result, "cannot import", *needles)
    assert json.loads(pdx_here("runs", "--registry", url, "--json")) == []


LLAMA_CASES = [
    ({"n_threads": "8"}, "n_threads is '8', not a number"),
    ({"model_size": 1e400}, "model_size is inf"),
    ({"samples_ts": ["fast", "faster", "fastest"]}, "samples_ts[0]"),
    ({"test_time": "yesterday"}, "test_time is 'yesterday', not an ISO 8601 time"),
    ({"n_prompt": -16}, "n_prompt is -16"),
    ({"avg_ns": float("nan")}, "avg_ns is nan"),
    ({"samples_ns": [1, 2.5, 3]}, "samples_ns[1] is 2.5, not a whole number"),
    ({"gpu_info": {"name": "x"}}, "gpu_info is {'name': 'x'}, not text"),
    ({"n_prompt": 10**12}, "n_prompt is 1000000000000, over the limit"),
]


@pytest.mark.parametrize("change, needle", LLAMA_CASES)
def test_llama_bench_fields(registry_url, tmp_path, change, needle):
    text = json.dumps([LLAMA_BENCH | change], allow_nan=True)
    _refused(registry_url, _write(tmp_path, "bench.json", text), needle)


VLLM_CASES = [
    ({"completed": float("nan")}, "completed is nan"),
    ({"ttfts": [float("inf")] + VLLM["ttfts"][1:]}, "ttfts[0] is inf"),
    ({"duration": -1}, "duration is -1"),
    ({"itls": [["x"]] + VLLM["itls"][1:]}, "itls[0][0] is 'x'"),
    ({"max_concurrency": 0}, "max_concurrency is 0"),
    ({"latencies": [9223372037.0] + VLLM["latencies"][1:]}, "longer than any benchmark"),  # found by hypothesis
    ({"p150_ttft_ms": 1.0, "ttfts": None}, None),  # a percentile over 100 is ignored, not a crash
]


@pytest.mark.parametrize("change, needle", VLLM_CASES)
def test_vllm_bench_serve_fields(registry_url, tmp_path, change, needle):
    path = _write(tmp_path, "serve.json", json.dumps(VLLM | change, allow_nan=True))
    if needle is None:
        assert json.loads(pdx_here("import", str(path), "--registry", registry_url, "--json"))["added"]
    else:
        _refused(registry_url, path, needle)


def test_vllm_lists_of_the_wrong_type(registry_url, tmp_path):
    document = VLLM | {"input_lens": "32,32,32"}
    _refused(registry_url, _write(tmp_path, "serve.json", json.dumps(document)), "malformed")


def test_mlx_figure_that_is_no_number(registry_url, tmp_path):
    text = (DATA / "mlx_lm_benchmark_b1.txt").read_text()
    damaged = text.replace("prompt_tps=", "prompt_tps=1.2.3", 1)
    _refused(registry_url, _write(tmp_path, "mlx.txt", damaged), "is not key=number")


def test_a_forced_format_that_is_wrong(registry_url, tmp_path):
    path = _write(tmp_path, "bench.json", json.dumps([LLAMA_BENCH]))
    _refused(registry_url, path, "not a pdx bundle", args=("--format", "bundle"))
    _refused(registry_url, path, args=("--format", "vllm-bench-serve"))
    _refused(registry_url, path, args=("--format", "llama-bench-md"))
    _refused(registry_url, _write(tmp_path, "serve.json", json.dumps(VLLM)), args=("--format", "llama-bench-json"))
    result = run_pdx_here("import", str(path), "--registry", registry_url, "--format", "nope")
    assert_one_line_error(result, "--format nope: unknown format", "llama-bench-md")


# -- any mutation: stored exactly, or a one-line error -----------------------------------------------------------

_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.lists(st.integers(-5, 10**9), max_size=4), st.dictionaries(st.text(max_size=5),
                                                                                        st.integers(), max_size=2),
)


def _paths(value, prefix=()):
    """Every place in a JSON document a mutation can land."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            yield from _paths(item, prefix + (i,))


def _mutated(document, path, value):
    document = copy.deepcopy(document)
    if not path:
        return value
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return document


@pytest.fixture(scope="module")
def shared_registry(tmp_path_factory):
    """One registry for every example of a property (a fresh one each would spend the time on migrations)."""
    from pdx import api

    registry = api.open_registry(f"sqlite:///{tmp_path_factory.mktemp('prop') / 'prop.sqlite'}")
    yield registry
    registry.close()


def _imports_exactly_or_refuses(registry, tmp_path, text, name):
    from pdx.registry import transfer
    from pdx.contract.errors import PdxError

    path = _write(tmp_path, name, text)
    before = set(registry.run_ids())
    try:
        done = transfer.import_file(registry, str(path))
    except PdxError as exc:
        assert "\n" not in str(exc) and str(exc)
        assert set(registry.run_ids()) == before  # nothing stored
        return
    stored = registry.records(done.added)
    again = transfer.import_file(registry, str(path))
    assert again.added == [] and set(again.skipped) == set(done.added) | set(done.skipped)
    for record in stored:
        for test in record["tests"]:
            for s in test["samples"]:
                assert isinstance(s["ns"], int) and s["ns"] > 0
            for key in ("n_prompt", "n_gen", "depth"):
                assert isinstance(test[key], int) and test[key] >= 0
            mean = (test["engine"].get("reported") or {}).get("mean")
            assert mean is None or math.isfinite(mean)


_PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_PROPERTY
@given(data=st.data())
def test_any_mutation_of_llama_bench_json(shared_registry, tmp_path, data):
    document = [LLAMA_BENCH, LLAMA_BENCH | {"n_prompt": 0, "n_gen": 4}]
    path = data.draw(st.sampled_from(list(_paths(document))))
    text = json.dumps(_mutated(document, path, data.draw(_VALUES)), allow_nan=True)
    _imports_exactly_or_refuses(shared_registry, tmp_path, text, "bench.json")


@_PROPERTY
@given(data=st.data())
def test_any_mutation_of_vllm_bench_serve(shared_registry, tmp_path, data):
    path = data.draw(st.sampled_from(list(_paths(VLLM))))
    text = json.dumps(_mutated(VLLM, path, data.draw(_VALUES)), allow_nan=True)
    _imports_exactly_or_refuses(shared_registry, tmp_path, text, "serve.json")


def _text_mutation(data, text):
    at = data.draw(st.integers(0, len(text) - 1))
    cut = data.draw(st.integers(0, 8))
    insert = data.draw(st.text(alphabet="0123456789.|± -+eEx\n", max_size=6))
    return text[:at] + insert + text[at + cut:]


@_PROPERTY
@given(data=st.data())
def test_any_mutation_of_mlx_lm_benchmark(shared_registry, tmp_path, data):
    text = (DATA / "mlx_lm_benchmark_b1.txt").read_text()
    _imports_exactly_or_refuses(shared_registry, tmp_path, _text_mutation(data, text), "mlx.txt")


@_PROPERTY
@given(data=st.data())
def test_any_mutation_of_a_llama_bench_table(shared_registry, tmp_path, data):
    text = (DATA / "llama_bench_forum_m1max.md").read_text()
    _imports_exactly_or_refuses(shared_registry, tmp_path, _text_mutation(data, text), "post.md")
