"""Traffic that looks like traffic: what a load test's requests carry, token-exact from the run's seed.

Built on :class:`pdx.domain.serving.prompts.PromptMaker` (fresh prompts of exact
length) and a seed it hands out; nothing here draws token ids itself.

- Shared system prompt: ``system`` tokens, drawn once, ahead of every
  request's user part (the prefix cache holds it after the first request).
- Multi-turn conversations: each turn sends the conversation so far (system
  prompt, every earlier user part, a stand-in of each earlier reply: fresh
  tokens of the reply's length, since the server's own reply is not sent
  back) plus a new user part. Conversations go turn by turn: the first turn
  of every conversation of a group, then the second, and so on, so a turn
  is sent once its predecessor has most likely ended; the prefix cache sees
  the conversation grow as chat clients grow it (it can hold the earlier
  prompt, not the stand-in reply).
- Length distributions, per input (the user part) and output: ``fixed``,
  ``uniform:S`` (uniform within +/- S of the mean, S a fraction) or
  ``lognormal:SIGMA`` (a lognormal of the given mean and log-space spread),
  the mean being ``-p`` / ``-n``; at least one token.
- Trace replay: a JSONL file of ``{"timestamp": s, "input_len": n,
  "output_len": m[, "conversation_id": id]}`` (``input_length`` /
  ``output_length`` also read): each line one request at its offset from the
  first; ``input_len`` is the whole prompt, so a conversation's turn is its
  history (cut to fit) topped up with fresh tokens.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass
from typing import Iterator

from pdx.contract.errors import PdxError
from pdx.base.files import read_regular
from pdx.contract.numbers import MAX_TOKENS, parse_float

DISTRIBUTIONS = ("fixed", "uniform", "lognormal")
MAX_SIGMA = 4.0  # a lognormal's log-space spread: at 4, one length in a thousand is already ~80x the mean
CONVERSATION_GROUP = 8  # conversations interleaved turn by turn when the run is bounded by time


@dataclass(frozen=True)
class Lengths:
    kind: str = "fixed"
    spread: float = 0.0

    @classmethod
    def parse(cls, text: str | None, flag: str) -> "Lengths":
        if not text or text == "fixed":
            return cls()

        kind, _, value = text.partition(":")
        try:  # a finite decimal: float() would take "inf" and "nan", and a run would be stored before a draw failed
            spread = parse_float(value, flag)
        except PdxError:
            spread = math.nan
        if kind not in DISTRIBUTIONS[1:] or not spread > 0 or (kind == "uniform" and spread > 1) or \
                (kind == "lognormal" and spread > MAX_SIGMA):
            raise PdxError(f"{flag} {text}: cannot read it",
                           f"give fixed, uniform:S (0 < S <= 1, a fraction of the mean) or lognormal:SIGMA "
                           f"(0 < SIGMA <= {MAX_SIGMA:g})")
        return cls(kind, spread)

    def __str__(self) -> str:
        return self.kind if self.kind == "fixed" else f"{self.kind}:{self.spread!r}"

    def draw(self, rng: random.Random, mean: int) -> int:
        if self.kind == "uniform":
            value = rng.uniform(mean * (1 - self.spread), mean * (1 + self.spread))
        elif self.kind == "lognormal":  # mu chosen so the mean is ``mean``
            value = rng.lognormvariate(math.log(mean) - self.spread ** 2 / 2, self.spread)
        else:
            return mean
        return min(max(1, round(value)), MAX_TOKENS)  # a lognormal's far tail is no prompt any server takes


@dataclass(frozen=True)
class TraceLine:
    at_s: float
    input_len: int
    output_len: int
    conversation: str | None = None


def read_trace(path: str) -> tuple[list[TraceLine], str]:
    """The lines of a JSONL trace (offsets from its first timestamp) and the file's sha256."""
    try:
        data = read_regular(path)  # a named pipe or a device is refused, never waited on
    except OSError as exc:
        raise PdxError(f"--trace {path}: cannot read it ({exc.strerror or exc})") from None
    lines = []
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
            at = float(item["timestamp"])
            n_in = item.get("input_len", item.get("input_length"))
            n_out = item.get("output_len", item.get("output_length"))
            conversation = item.get("conversation_id")
        except (ValueError, KeyError, TypeError, AttributeError):
            raise PdxError(f"--trace {path}: line {number} is not a JSON object with a timestamp",
                           'each line: {"timestamp": S, "input_len": N, "output_len": M[, "conversation_id": ID]}'
                           ) from None
        if not (isinstance(n_in, int) and isinstance(n_out, int) and n_in >= 1 and n_out >= 1
                and math.isfinite(at) and at >= 0) or isinstance(n_in, bool) or isinstance(n_out, bool):
            raise PdxError(f"--trace {path}: line {number}: input_len and output_len must be whole numbers of at "
                           "least 1 and the timestamp a number of seconds, 0 or more")
        lines.append(TraceLine(at, n_in, n_out, None if conversation is None else str(conversation)))
    if not lines:
        raise PdxError(f"--trace {path}: no requests in it")
    lines.sort(key=lambda line: line.at_s)
    first = lines[0].at_s
    return [TraceLine(line.at_s - first, line.input_len, line.output_len, line.conversation) for line in lines], \
        hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Shape:
    """What one load test's requests carry (the spec's traffic fields)."""

    n_prompt: int
    n_gen: int
    system: int = 0
    turns: int = 1
    input_dist: Lengths = Lengths()
    output_dist: Lengths = Lengths()

    def requests(self, prompts, rng: random.Random, count: int | None
                 ) -> Iterator[tuple[list[int], int, str, str | None]]:
        """(prompt, max_tokens, role, session) of each request in sending order (session: the conversation
        a turn belongs to, None for a single-turn request); ``count`` None: endless."""
        system = prompts.tokens(self.system) if self.system else []
        if self.turns == 1:
            sent = 0
            while count is None or sent < count:
                n_out = self.output_dist.draw(rng, self.n_gen)
                yield system + prompts.tokens(self.input_dist.draw(rng, self.n_prompt)), n_out, "load", None
                sent += 1
            return
        sent, groups = 0, 0
        while count is None or sent < count:
            group = CONVERSATION_GROUP if count is None else math.ceil((count - sent) / self.turns)
            histories = [list(system) for _ in range(group)]
            for turn in range(self.turns):
                for index, history in enumerate(histories):
                    if count is not None and sent >= count:
                        return
                    prompt = history + prompts.tokens(self.input_dist.draw(rng, self.n_prompt))
                    n_out = self.output_dist.draw(rng, self.n_gen)
                    yield prompt, n_out, f"turn{turn + 1}", f"{groups}.{index}"
                    sent += 1
                    history[:] = prompt + prompts.tokens(n_out)  # a stand-in of the reply
            groups += 1


def trace_requests(lines: list[TraceLine], prompts) -> Iterator[tuple[list[int], int, float, str, str | None]]:
    """(prompt, max_tokens, offset s, role, conversation) of each trace line; a conversation's turns extend
    its history."""
    histories: dict[str, list[int]] = {}
    turns: dict[str, int] = {}
    for line in lines:
        history = histories.get(line.conversation, []) if line.conversation is not None else []
        kept = history[:line.input_len - 1]  # at least one fresh token: the turn's new part
        prompt = kept + prompts.tokens(line.input_len - len(kept))
        role = "trace"
        if line.conversation is not None:
            turns[line.conversation] = turns.get(line.conversation, 0) + 1
            role = f"turn{turns[line.conversation]}"
            histories[line.conversation] = prompt + prompts.tokens(line.output_len)
        yield prompt, line.output_len, line.at_s, role, line.conversation
