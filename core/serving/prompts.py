"""Prompts as token ids of exact length, drawn from a recorded seed.

Ids are drawn above the special tokens and below the vocabulary size, so
every engine sees exactly the count asked for. Random prompts share no
prefix (a cold cache stays cold); :meth:`with_prefix` makes prompts that
share one on purpose."""

from __future__ import annotations

import random

FIRST_ID = 16  # below: special and control tokens of most vocabularies
UNKNOWN_VOCAB = 32000  # when the model's vocabulary is not known (a remote server): ids every llama accepts


class PromptMaker:
    def __init__(self, seed: int, n_vocab: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.high = max(FIRST_ID + 1, n_vocab or UNKNOWN_VOCAB)

    def tokens(self, n: int) -> list[int]:
        return [self.rng.randrange(FIRST_ID, self.high) for _ in range(n)]

    def many(self, count: int, n: int) -> list[list[int]]:
        return [self.tokens(n) for _ in range(count)]

    def stream(self, n: int):
        """Endless fresh prompts of ``n`` tokens (for runs bounded by time)."""
        while True:
            yield self.tokens(n)

    def with_prefix(self, prefix: list[int], count: int, n: int) -> list[list[int]]:
        """``count`` prompts of ``n`` tokens that all start with ``prefix``."""
        return [prefix + self.tokens(n - len(prefix)) for _ in range(count)]
