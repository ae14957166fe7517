"""The synthetic models' one vocabulary (pdx.domain.synth.vocabulary): the HF tokenizer pdx writes
round-trips any text, and gives the ids of the GGUF's tokens. The same texts against
llama.cpp's own tokenizer are in tests/test_llamacpp_tools.py, against vLLM's in
tests/test_vllm.py."""

from hypothesis import given, settings, strategies as st
from tokenizers import Tokenizer

from pdx.domain.synth import get_shape, vocabulary, write_hf

import pytest

SHAPE = get_shape("tiny")
# Texts a tool sends: pdx's words, English, whitespace runs, multi-byte characters, the boundary mark.
TEXT = st.lists(st.sampled_from(list("t0123456789 ab.,\n\té") + ["😀", vocabulary.SPACE, "t1", " t2"]),
                max_size=40).map("".join) | st.text(max_size=30)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return Tokenizer.from_file(str(write_hf(SHAPE, "float32",
                                            tmp_path_factory.mktemp("hf") / "tiny") / "tokenizer.json"))


def test_the_list_is_prefix_closed_and_fills_the_vocabulary():
    tokens = vocabulary.tokens(SHAPE.n_vocab)
    assert len(tokens) == len(set(tokens)) == SHAPE.n_vocab
    words = set(tokens[vocabulary.FIRST_WORD_ID:])
    assert all(w[:-1] in words or w[:-1] == vocabulary.SPACE + "t" for w in words)
    assert len(vocabulary.merges(SHAPE.n_vocab)) == len(words) + 1


def test_words_are_one_token_each(tokenizer):
    ids = list(range(vocabulary.FIRST_WORD_ID, SHAPE.n_vocab, 37))
    text = vocabulary.text_of(ids)
    assert text.startswith("t0 ") and tokenizer.encode(text).ids == ids and tokenizer.decode(ids) == text


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_any_text_round_trips(tokenizer, text):
    ids = tokenizer.encode(text).ids
    text = text.replace(vocabulary.SPACE, " ")  # the boundary mark is a space, as in every SentencePiece vocabulary
    assert all(0 <= i < SHAPE.n_vocab for i in ids)
    assert tokenizer.decode(ids) == text


def _texts() -> list[str]:
    import random

    rng = random.Random(1)
    alphabet = list("t0123456789 ab.,<>\n\té") + ["😀", vocabulary.SPACE]
    fixed = ["t0 t1 t2", "t123 t7 t99", "Hello, world! The cat sat.", "t1000 t1t2 ünï 😀\n\tend", " leading",
             "  two  spaces ", "t5t5 t05 t0005", "<s> hi </s>", vocabulary.text_of(list(range(280, 300)))]
    return fixed + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(200)]


@pytest.mark.llamacpp
def test_llama_server_tokenizes_every_text_as_the_hf_tokenizer_does(tokenizer, tmp_path):
    import requests

    from pdx.plugins.llamacpp.locate import find_llama_server
    from pdx.measure.serving.managed import ManagedServer, free_port
    from pdx.domain.synth import write_gguf

    model = write_gguf(SHAPE, "f16", tmp_path / "tiny.gguf")
    port = free_port()
    server = ManagedServer("llama-server", [str(find_llama_server()), "-m", str(model), "--host", "127.0.0.1",
                                            "--port", str(port), "-t", "1"], port, tmp_path / "server.log",
                           startup_timeout_s=300)
    server.start()
    try:
        for text in _texts():
            by_llama = requests.post(f"{server.url}/tokenize", json={"content": text}, timeout=60).json()["tokens"]
            assert by_llama == tokenizer.encode(text).ids, text
    finally:
        server.stop()


@pytest.mark.vllm
def test_vllm_tokenizes_every_text_as_the_hf_tokenizer_does(tokenizer, tmp_path):
    from vllm.tokenizers import get_tokenizer

    theirs = get_tokenizer(str(write_hf(SHAPE, "float16", tmp_path / "tiny")))
    for text in _texts():
        assert theirs.encode(text) == tokenizer.encode(text).ids, text
