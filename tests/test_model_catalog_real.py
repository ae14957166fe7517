"""The real models of pdx's catalog beyond its first dozen: each read from its published config.json,
each found from the words llama-bench prints for it (``<llama.cpp architecture> <size> <type>``, the
size llama.cpp's guess from the layer count: Qwen2.5-72B is "qwen2 70B", Mistral Small 24B "llama 13B",
Llama 3.1 405B "llama ?B"), and each as large as its makers say."""

import pytest

from pdx.domain.ceilings.imported import with_catalog_shape
from pdx.domain.synth import SHAPES, get_shape
from pdx.domain.synth.shapes import catalog, find_shape

# Shapes added with llama-bench's names; each with the count its makers publish, and where.
CARD = "https://huggingface.co/{}"
GEMMA3_REPORT = "https://arxiv.org/abs/2503.19786 (Gemma 3 technical report, table 1: embedding + non-embedding)"
PUBLISHED = {
    # name: (total, active or None, where the count is published)
    "llama-3.2-3b": (3.21e9, None, CARD.format("meta-llama/Llama-3.2-3B")),
    "llama-3.1-70b": (70.6e9, None, CARD.format("meta-llama/Llama-3.1-70B")),
    "llama-3.1-405b": (406e9, None, CARD.format("meta-llama/Llama-3.1-405B")),
    "llama-2-70b": (69.0e9, None, CARD.format("meta-llama/Llama-2-70b-hf")),
    "qwen2.5-0.5b": (0.49e9, None, CARD.format("Qwen/Qwen2.5-0.5B")),
    "qwen2.5-1.5b": (1.54e9, None, CARD.format("Qwen/Qwen2.5-1.5B")),
    "qwen2.5-3b": (3.09e9, None, CARD.format("Qwen/Qwen2.5-3B")),
    "qwen2.5-7b": (7.61e9, None, CARD.format("Qwen/Qwen2.5-7B")),
    "qwen2.5-14b": (14.7e9, None, CARD.format("Qwen/Qwen2.5-14B")),
    "qwen2.5-32b": (32.5e9, None, CARD.format("Qwen/Qwen2.5-32B")),
    "qwen2.5-72b": (72.7e9, None, CARD.format("Qwen/Qwen2.5-72B")),
    "qwen3-0.6b": (0.6e9, None, CARD.format("Qwen/Qwen3-0.6B")),
    "qwen3-1.7b": (1.7e9, None, CARD.format("Qwen/Qwen3-1.7B")),
    "qwen3-4b": (4.0e9, None, CARD.format("Qwen/Qwen3-4B")),
    "qwen3-14b": (14.8e9, None, CARD.format("Qwen/Qwen3-14B")),
    "qwen3-32b": (32.8e9, None, CARD.format("Qwen/Qwen3-32B")),
    "qwen3-235b-a22b": (235e9, 22e9, CARD.format("Qwen/Qwen3-235B-A22B")),
    "gemma-3-1b": (0.302e9 + 0.698e9, None, GEMMA3_REPORT),
    "gemma-3-4b": (0.675e9 + 3.209e9, None, GEMMA3_REPORT),
    "gemma-3-27b": (1.416e9 + 25.6e9, None, GEMMA3_REPORT),
    "mistral-7b": (7.25e9, None, CARD.format("mistralai/Mistral-7B-v0.3")),
    "mistral-nemo-12b": (12.2e9, None, CARD.format("mistralai/Mistral-Nemo-Base-2407")),
    "mistral-small-24b": (23.6e9, None, CARD.format("mistralai/Mistral-Small-24B-Base-2501")),
    "mixtral-8x22b": (141e9, 39e9, "https://mistral.ai/news/mixtral-8x22b"),
    "phi-3.5-mini": (3.8e9, None, CARD.format("microsoft/Phi-3.5-mini-instruct")),
    "phi-4-mini": (3.8e9, None, CARD.format("microsoft/Phi-4-mini-instruct")),
    "phi-4": (14.7e9, None, CARD.format("microsoft/phi-4")),
}


def test_every_new_shape_is_in_the_catalog_with_the_config_json_it_was_read_from():
    entries = {m["name"]: m for m in catalog()["models"]}
    assert set(PUBLISHED) <= set(entries)
    for name in PUBLISHED:
        source = entries[name]["source"]
        assert source.startswith("https://huggingface.co/") and "/blob/main/config.json" in source, name
        assert not get_shape(name).source.startswith("pdx"), name


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_shapes_have_their_published_parameter_counts(name):
    total, active, _where = PUBLISHED[name]
    shape = get_shape(name)
    assert shape.n_params == pytest.approx(total, rel=0.03)
    assert shape.active_params == pytest.approx(active or total, rel=0.03)


# llama-bench's model column, its params column (as the markdown table rounds it), and the shape it names.
LLAMA_BENCH = [
    ("llama 1B Q8_0", 1.24e9, "llama-3.2-1b"),
    ("llama 3B Q4_K - Medium", 3.21e9, "llama-3.2-3b"),
    ("llama 7B Q4_0", 6.74e9, "llama-2-7b"),
    ("llama 7B Q4_0", 7.25e9, "mistral-7b"),
    ("llama 8B Q4_0", 8.03e9, "llama-3.1-8b"),
    ("llama 13B Q4_K - Medium", 13.02e9, "llama-2-13b"),
    ("llama 13B Q4_K - Medium", 12.25e9, "mistral-nemo-12b"),
    ("llama 13B Q4_K - Medium", 23.57e9, "mistral-small-24b"),
    ("llama 70B Q4_K - Medium", 70.55e9, "llama-3.3-70b"),
    ("llama 70B Q4_0", 68.98e9, "llama-2-70b"),
    ("llama ?B Q4_K - Medium", 405.85e9, "llama-3.1-405b"),
    ("llama 8x7B Q4_0", 46.70e9, "mixtral-8x7b"),
    ("llama 8x22B Q4_K - Medium", 140.62e9, "mixtral-8x22b"),
    ("qwen2 1B Q8_0", 0.49e9, "qwen2.5-0.5b"),
    ("qwen2 1.5B Q4_K - Medium", 1.54e9, "qwen2.5-1.5b"),
    ("qwen2 3B Q4_K - Medium", 3.09e9, "qwen2.5-3b"),
    ("qwen2 7B Q4_K - Medium", 7.62e9, "qwen2.5-7b"),
    ("qwen2 14B Q4_K - Medium", 14.77e9, "qwen2.5-14b"),
    ("qwen2 32B Q4_K - Medium", 32.76e9, "qwen2.5-32b"),
    ("qwen2 70B Q4_K - Medium", 72.71e9, "qwen2.5-72b"),
    ("qwen3 0.6B Q8_0", 0.60e9, "qwen3-0.6b"),
    ("qwen3 1.7B Q8_0", 1.72e9, "qwen3-1.7b"),
    ("qwen3 4B Q4_K - Medium", 4.02e9, "qwen3-4b"),
    ("qwen3 8B Q4_K - Medium", 8.19e9, "qwen3-8b"),
    ("qwen3 14B Q8_0", 14.77e9, "qwen3-14b"),
    ("qwen3 32B Q4_K - Medium", 32.76e9, "qwen3-32b"),
    ("qwen3moe 30B.A3B Q4_K - Medium", 30.53e9, "qwen3-30b-a3b"),
    ("qwen3moe 235B.A22B Q4_K - Medium", 235.09e9, "qwen3-235b-a22b"),
    ("gemma3 1B Q4_K - Medium", 1.00e9, "gemma-3-1b"),
    ("gemma3 4B Q4_K - Medium", 3.88e9, "gemma-3-4b"),
    ("gemma3 12B Q4_K - Medium", 11.77e9, "gemma-3-12b"),
    ("gemma3 27B Q4_K - Medium", 27.01e9, "gemma-3-27b"),
    ("phi3 3B Q4_K - Medium", 3.82e9, "phi-3.5-mini"),
    ("phi3 3B Q4_K - Medium", 3.84e9, "phi-4-mini"),
    ("phi3 14B Q4_K - Medium", 14.66e9, "phi-4"),
    ("gpt-oss 120B MXFP4 MoE", 116.83e9, "gpt-oss-120b"),
]


@pytest.mark.parametrize("text, n_params, name", LLAMA_BENCH)
def test_llama_bench_s_words_and_count_find_the_shape(text, n_params, name):
    assert find_shape(text, n_params).name == name
    assert abs(get_shape(name).n_params - n_params) < 0.1 * n_params  # and with_catalog_shape takes it


@pytest.mark.parametrize("text, name", [(t, n) for t, _, n in LLAMA_BENCH if t.split()[:2] not in (
    ["llama", "7B"], ["llama", "13B"], ["llama", "70B"], ["phi3", "3B"])])
def test_an_unambiguous_name_needs_no_count(text, name):
    assert find_shape(text).name == name


@pytest.mark.parametrize("text, name", [
    # Without a count, a name two shapes share is the first in the catalog: the older, better-known model.
    ("llama 7B Q4_0", "llama-2-7b"), ("llama 13B Q4_0", "llama-2-13b"), ("llama 70B Q4_0", "llama-3.3-70b"),
    ("phi3 3B Q4_K - Medium", "phi-3.5-mini"),
])
def test_a_shared_name_without_a_count(text, name):
    assert find_shape(text).name == name


@pytest.mark.parametrize("text, name", [
    ("Meta-Llama-3.1-70B-Instruct-Q4_K_M.gguf", "llama-3.1-70b"), ("Llama-3.2-3B-Instruct-Q4_K_M.gguf", "llama-3.2-3b"),
    ("Meta-Llama-3.1-405B-Instruct-Q4_K_M-00001-of-00005.gguf", "llama-3.1-405b"),
    ("llama-2-70b-chat.Q4_K_M.gguf", "llama-2-70b"), ("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "qwen2.5-7b"),
    ("Qwen2-7B-Instruct-Q4_K_M.gguf", "qwen2.5-7b"), ("qwen2.5-0.5b-instruct-q8_0.gguf", "qwen2.5-0.5b"),
    ("Qwen2-72B-Instruct-Q4_K_M.gguf", "qwen2.5-72b"), ("Qwen3-1.7B-Q8_0.gguf", "qwen3-1.7b"),
    ("Qwen3-235B-A22B-Q4_K_M-00001-of-00003.gguf", "qwen3-235b-a22b"), ("gemma-3-27b-it-Q4_K_M.gguf", "gemma-3-27b"),
    ("gemma-3-1b-it-Q8_0.gguf", "gemma-3-1b"), ("Mistral-7B-Instruct-v0.3.Q4_K_M.gguf", "mistral-7b"),
    ("Mistral-Nemo-Instruct-2407-Q4_K_M.gguf", "mistral-nemo-12b"),
    ("Mistral-Small-24B-Instruct-2501-Q4_K_M.gguf", "mistral-small-24b"),
    ("Mixtral-8x22B-Instruct-v0.1.Q4_K_M.gguf", "mixtral-8x22b"), ("Mixtral-8x7B-v0.1.Q4_K_M.gguf", "mixtral-8x7b"),
    ("Phi-3-mini-4k-instruct-q4.gguf", "phi-3.5-mini"), ("Phi-3.5-mini-instruct-Q4_K_M.gguf", "phi-3.5-mini"),
    ("Phi-4-mini-instruct-Q4_K_M.gguf", "phi-4-mini"), ("phi-4-Q4_K_M.gguf", "phi-4"),
])
def test_a_file_name_finds_its_shape(text, name):
    assert find_shape(text).name == name


def test_a_file_name_and_a_count_agree_with_the_words():
    """llama-bench's words and the file's name together: the count decides, the longer name breaks a tie."""
    assert find_shape("llama 8B Q4_0 /models/Meta-Llama-3-8B-Instruct.Q4_0.gguf", 8.03e9).name == "llama-3-8b"
    assert find_shape("llama 70B Q4_0 /m/llama-2-70b.Q4_0.gguf", 68.98e9).name == "llama-2-70b"
    assert find_shape("llama 13B Q4_K - Medium Mistral-Small-24B-Instruct-2501", 23.57e9).name == "mistral-small-24b"


def test_every_alias_names_its_own_shape_at_its_own_count():
    for shape in SHAPES.values():
        for alias in shape.aliases:
            assert find_shape(f"{alias} Q4_0", shape.n_params) is shape, (shape.name, alias)


def test_a_count_far_from_every_matching_shape_is_still_refused_by_the_import():
    """"llama ?B" is every llama llama.cpp cannot size: a 1.7B SmolLM must not become Llama 3.1 405B."""
    model = {"name": "llama ?B Q4_K - Medium", "n_params": 1.71e9, "file_bytes": 1_000_000_000}
    assert with_catalog_shape(model) == model


@pytest.mark.parametrize("name, n_params, shape", [
    ("qwen2 7B Q4_K - Medium", 7_615_616_512, "qwen2.5-7b"),
    ("llama 70B Q4_0", 68_976_648_192, "llama-2-70b"),
    ("llama 13B Q4_K - Medium", 23_572_403_200, "mistral-small-24b"),
])
def test_an_imported_row_takes_the_shape_its_count_names(name, n_params, shape):
    model = with_catalog_shape({"name": name, "n_params": n_params, "file_bytes": n_params // 2})
    found = get_shape(shape)
    assert model["extra"]["catalog_shape"]["name"] == shape
    assert (model["n_layers"], model["n_kv_heads"], model["head_dim"]) == (found.n_layers, found.n_kv_heads,
                                                                          found.head_dim)


@pytest.mark.parametrize("name, per_token, sliding", [
    ("qwen2.5-7b", 2 * 28 * 4 * 128 * 2, 0), ("qwen2.5-72b", 2 * 80 * 8 * 128 * 2, 0),
    ("llama-2-70b", 2 * 80 * 8 * 128 * 2, 0), ("llama-3.1-405b", 2 * 126 * 8 * 128 * 2, 0),
    ("mistral-small-24b", 2 * 40 * 8 * 128 * 2, 0), ("phi-3.5-mini", 2 * 32 * 32 * 96 * 2, 0),
    ("qwen3-235b-a22b", 2 * 94 * 4 * 128 * 2, 0), ("gemma-3-27b", 2 * 62 * 16 * 128 * 2, 52),
    ("gemma-3-1b", 2 * 26 * 1 * 256 * 2, 22),
])
def test_kv_bytes_of_the_new_shapes(name, per_token, sliding):
    """Bytes a token adds to an f16 KV cache (K and V, every layer), and the layers that keep a window only."""
    shape = get_shape(name)
    assert 2 * shape.n_layers * shape.n_kv_heads * shape.head_dim * 2 == per_token
    assert shape.n_sliding_layers == sliding
    assert shape.kv_dims().bytes_at(1) == per_token
