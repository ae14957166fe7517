"""Prompts of serving scenarios, drawn one after another from the prompt stream.

A scenario (a sweep, a stall, a cache test, a multi-turn chat...) asks for as
many prompts as it needs, in an order its own code fixes; a
:class:`PromptMaker` hands them out from one repetition of the scenario in
:mod:`pdx.domain.prompt_stream`, so the same seed gives every server the same
prompts. Prompts share no prefix unless asked to (a cold cache stays cold);
``prefix=`` makes them share one on purpose.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from pdx.domain.prompt_stream import PromptStream


class PromptMaker:
    """The prompts of one repetition of scenario ``key``: the k-th call of :meth:`tokens` (or the k-th
    prompt of :meth:`many` / :meth:`stream`) is the k-th draw of that repetition."""

    def __init__(self, stream: PromptStream, key: str) -> None:
        self.source, self.key = stream, key
        self.repetition = stream.repetition(key)
        self.drawn = 0

    def _draw(self, part: str, n: int) -> list[int]:
        ids = self.source.ids(self.key, self.repetition, part, self.drawn, n)
        self.drawn += 1
        return ids

    def tokens(self, n: int, prefix: Sequence[int] = ()) -> list[int]:
        """A fresh prompt of ``n`` tokens, starting with ``prefix`` (counted in ``n``)."""
        if len(prefix) > n:
            raise ValueError(f"a prefix of {len(prefix)} tokens does not fit a prompt of {n}")
        return list(prefix) + self._draw("draw", n - len(prefix))

    def many(self, count: int, n: int, prefix: Sequence[int] = ()) -> list[list[int]]:
        return [self.tokens(n, prefix) for _ in range(count)]

    def stream(self, n: int, prefix: Sequence[int] = ()) -> Iterator[list[int]]:
        """Endless fresh prompts of ``n`` tokens (for runs bounded by time)."""
        while True:
            yield self.tokens(n, prefix)

    def seed(self) -> int:
        """A number drawn from the stream, to seed what else the scenario draws (its arrival times)."""
        return self._draw("seed", 1)[0]
