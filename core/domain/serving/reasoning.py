"""Which tokens of a stream are thinking and which are the answer.

A reasoning model streams its thinking before its answer, in one of two ways:

- split by the server (vLLM's and llama-server's reasoning parsers, OpenAI-style chat): a chunk's
  ``delta`` carries ``reasoning_content`` (or ``reasoning``, vLLM's newer name) for thinking and
  ``content`` for the answer;
- inline in the text (no parser, or ``/v1/completions``): the thinking is a ``<think>...</think>``
  span, the answer what follows it.

A chunk with tokens but no text (ids of special tokens, a text held back) belongs to the phase the
stream is in. The tags themselves count as thinking. A template that opens the span in the prompt
(DeepSeek-R1's, Qwen3's) streams thinking with only the closing tag: a ``</think>`` with no span open
and no thinking seen makes everything before it thinking (:data:`ALL_SO_FAR`). Nothing here touches
time: the caller stamps.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"
REASONING, ANSWER = "reasoning", "answer"
ALL_SO_FAR = "reasoning from the start"  # this event, and every token before it, was thinking
REASONING_KEYS = ("reasoning_content", "reasoning")


def _texts(event: dict) -> tuple[str, str]:
    """(thinking text the server split off, other text) of one streamed event, any dialect."""
    thinking, text = [], []
    for choice in event.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        if isinstance(delta, dict):
            thinking += [delta[k] for k in REASONING_KEYS if isinstance(delta.get(k), str)]
            text.append(delta.get("content") if isinstance(delta.get("content"), str) else "")
        text.append(choice.get("text") if isinstance(choice.get("text"), str) else "")
    if isinstance(event.get("content"), str):  # llama-server's own /completion
        text.append(event["content"])
    return "".join(thinking), "".join(text)


class Phases:
    """Follows one stream: :meth:`phase` says which phase an event's tokens belong to."""

    def __init__(self) -> None:
        self.thinking = False  # inside an inline <think> span
        self.seen = False  # any thinking yet

    def phase(self, event: dict) -> str:
        found = self._phase(event)
        if found == ALL_SO_FAR and self.seen:
            found = REASONING
        self.seen = self.seen or found != ANSWER
        return found

    def _phase(self, event: dict) -> str:
        thinking, text = _texts(event)
        if thinking:
            return REASONING
        if OPEN in text:
            self.thinking = CLOSE not in text.split(OPEN, 1)[1]
            return REASONING
        if CLOSE in text:  # the closing tag is thinking; what follows it is answer
            opened, self.thinking = self.thinking, False
            return REASONING if opened else ALL_SO_FAR
        return REASONING if self.thinking else ANSWER
