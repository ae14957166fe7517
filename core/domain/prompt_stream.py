"""One prompt stream: the exact token ids of every test, for a seed and a vocabulary.

Every backend that feeds its engine token ids takes them from here (llama.cpp
in-process, MLX, vLLM offline, every server backend), so one seed gives every
engine byte-identical prompts: "token-exact workloads across engines".
llama-bench draws its own and says so in its run.

The ids of a repetition are addressed, not drawn in turn: they follow from
(seed, vocabulary, test, repetition, part, sequence) alone, so what a backend
did before (warm-up runs it made or not, a depth it filled, a test it skipped)
changes nothing. :class:`PromptStream` counts the repetitions of each test,
so a continuation of a test (adaptive repetitions) gets fresh prompts and a
server's prefix cache never sees one twice.

One repetition of a test of depth D, P prompt tokens, G generated, batch B
(:class:`Prompts`):

- ``depth``: D ids, the same for every sequence (a server caches them once);
- ``prompts[s]``: P ids of sequence s;
- ``decode[s]``: G ids of sequence s. ``decode[s][0]`` is the token a decode
  starts from (what a tg test sends a server after the depth, what MLX feeds
  its first step); engines that choose every step's input (llama.cpp
  in-process, as llama-bench does) feed the rest, the others feed back what
  they generate.

The ids themselves, so any tool can reproduce them: id k of a part is
``FIRST_ID + v mod (n_vocab - FIRST_ID)``, with ``v`` the (k mod 8)-th
little-endian unsigned 64-bit word of the 64-byte BLAKE2b digest of the
compact JSON array ``[VERSION, seed, test, repetition, part, sequence, k // 8]``
(``part`` one of "depth", "prompt", "decode"; a serving scenario's draws "draw" and "seed"). Ids below ``FIRST_ID``
are left out: the special and control tokens of most vocabularies.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections import Counter
from dataclasses import dataclass

#: the stream's version, stored with every run (its workload's ``prompts``); raise it when the ids of a
#: (seed, vocabulary, test) change
VERSION = 1
FIRST_ID = 16  # below: special and control tokens of most vocabularies
UNKNOWN_VOCAB = 32000  # when the model's vocabulary is not known (a remote server): ids every llama accepts
_WORDS = struct.Struct("<8Q")


def token_ids(seed: int, n_vocab: int, test: str, repetition: int, part: str, sequence: int, n: int) -> list[int]:
    """``n`` ids of one part of one repetition (see the module's description)."""
    span = n_vocab - FIRST_ID
    if span < 1:
        raise ValueError(f"a vocabulary of {n_vocab} tokens has none from id {FIRST_ID} on")
    ids: list[int] = []
    for block in range((n + 7) // 8):
        address = json.dumps([VERSION, seed, test, repetition, part, sequence, block], separators=(",", ":"))
        ids.extend(FIRST_ID + word % span for word in _WORDS.unpack(hashlib.blake2b(address.encode()).digest()))
    return ids[:n]


@dataclass(frozen=True)
class Prompts:
    """The ids of one repetition of a pp/tg test."""

    depth: list[int]
    prompts: list[list[int]]
    decode: list[list[int]]

    def sent(self, sequence: int) -> list[int]:
        """What a server is sent for ``sequence``: the depth, then the prompt (a tg test: the token its
        decode starts from)."""
        return self.depth + (self.prompts[sequence] or self.decode[sequence][:1])


class PromptStream:
    """The prompt stream of one seed and vocabulary, as one backend draws from it."""

    def __init__(self, seed: int, n_vocab: int | None = None) -> None:
        self.seed = seed
        self.n_vocab = max(FIRST_ID + 1, n_vocab or UNKNOWN_VOCAB)
        self._repetitions: Counter[str] = Counter()

    def describe(self) -> dict:
        """What a stored run records of the stream it was fed."""
        return {"version": VERSION, "seed": self.seed, "n_vocab": self.n_vocab, "first_id": FIRST_ID}

    def repetition(self, key: str) -> int:
        """The next repetition of test ``key`` (0 first): warm-up runs count, so every one is fresh."""
        index = self._repetitions[key]
        self._repetitions[key] += 1
        return index

    def ids(self, key: str, repetition: int, part: str, sequence: int, n: int) -> list[int]:
        return token_ids(self.seed, self.n_vocab, key, repetition, part, sequence, n)

    def next(self, test, key: str | None = None) -> Prompts:
        """The ids of the next repetition of ``test`` (a :class:`~pdx.domain.workload.TestSpec`); ``key``
        (default: the test's name) sets apart runs that are no repetition of the test (an engine's
        own tool run beside pdx's measurement), so they shift no repetition's ids."""
        key = key or test.name
        rep = self.repetition(key)
        seqs = range(test.batch)
        return Prompts(depth=self.ids(key, rep, "depth", 0, test.depth),
                       prompts=[self.ids(key, rep, "prompt", s, test.n_prompt) for s in seqs],
                       decode=[self.ids(key, rep, "decode", s, test.n_gen) for s in seqs])
