"""The one vocabulary of pdx's synthetic models, for GGUF and HF alike.

A tool that sends text (GuideLLM, AIPerf, ``--backend openai`` streaming text)
counts tokens with the HF tokenizer while the server tokenizes with its own,
so the two must agree on every text. Both are written from this list:

    <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF>, the pieces
    "▁", "t", "0".."9", "▁t", then the words "▁t0", "▁t1", ... up to n_vocab.

The words are prefix-closed ("▁t123" needs "▁t12", "▁t1", "▁t", all present),
so llama.cpp's SentencePiece merging (the best-scoring bigram whose text is a
token, repeatedly) and a BPE over the chain merges ("▁t" + "1" -> "▁t1", ...)
build the same tokens from the same text; whatever no token covers falls back
to bytes on both sides. The text "t0 t1 t2" is three tokens; any other text
still round-trips. No BOS is added on either side, so counts agree exactly.
"""

from __future__ import annotations

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")  # ids 0, 1, 2
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2
SPACE = "\u2581"  # SentencePiece's word boundary: a space, and the start of the text
PIECES = (SPACE, "t", *"0123456789", SPACE + "t")
FIRST_WORD_ID = len(SPECIAL_TOKENS) + 256 + len(PIECES)
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_BYTE = 1, 2, 3, 6  # llama.cpp's token types


def byte_token(b: int) -> str:
    return f"<0x{b:02X}>"


def word(i: int) -> str:
    """The i-th word token's text (ids from :data:`FIRST_WORD_ID`)."""
    return f"{SPACE}t{i}"


def tokens(n_vocab: int) -> list[str]:
    head = [*SPECIAL_TOKENS, *(byte_token(b) for b in range(256)), *PIECES]
    return head + [word(i) for i in range(n_vocab - len(head))]


def token_types(n_vocab: int) -> list[int]:
    head = [TYPE_UNKNOWN, TYPE_CONTROL, TYPE_CONTROL] + [TYPE_BYTE] * 256
    return head + [TYPE_NORMAL] * (n_vocab - len(head))


def scores(n_vocab: int) -> list[float]:
    """SentencePiece scores: shorter tokens first; the words are merged only along their own chain, so
    any order of them gives the same result."""
    head = len(SPECIAL_TOKENS) + 256
    return [0.0] * head + [-float(i) for i in range(n_vocab - head)]


def merges(n_vocab: int) -> list[tuple[str, str]]:
    """The BPE merges that build every word from its pieces: "▁"+"t", then "▁tN" + digit."""
    out = [(SPACE, "t")]
    for i in range(n_vocab - FIRST_WORD_ID):
        out.append((word(i // 10), str(i % 10)) if i >= 10 else (SPACE + "t", str(i)))
    return out


def text_of(ids: list[int]) -> str:
    """The text of word-token ids (what a tool would send for them): "t0 t1 ..." with no leading space."""
    return "".join(word(i - FIRST_WORD_ID) for i in ids).replace(SPACE, " ").lstrip(" ")
