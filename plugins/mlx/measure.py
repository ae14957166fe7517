"""pdx's own measurement of an mlx-lm model: the forward passes mlx-lm's
generate runs, timed to pdx's definitions.

- Prompts: the ids of :mod:`pdx.domain.prompt_stream`, as every backend feeds them.
- Depth: the depth's ids go into a fresh KV cache first, for every sequence,
  untimed, for every repetition (as llama-bench does).
- pp N: the N new prompt tokens; as in mlx-lm's ``generate_step``, all but
  the last go through the model in ``prefill_step_size`` chunks with only the
  cache evaluated (so no logits are computed for them), then the last token;
  the clock stops when its logits exist (``mx.eval``).
- tg N: N forward passes of one token per sequence, each fed the previous
  step's argmax, so every step depends on the one before. Steps are
  pipelined as mlx-lm's generate pipelines them (``mx.async_eval``: the next
  step's graph is built while the device computes this one); the clock stops
  when the N-th token exists. EOS plays no part: the loop never stops early.
- Batch B: the same passes over a (B, tokens) array with mlx-lm's ordinary
  KV cache, which holds B equal-length sequences as they are, no padding.
- With a draft model (one sequence): the draft's cache gets the depth too,
  untimed; prefill is the target's pass over the prompt as above and the
  draft's (its cache only, no logits), as ``speculative_generate_step``
  prefills both before its first token; tg N is mlx-lm's own
  ``speculative_generate_step`` making N tokens from the same first token,
  the clock stopping when the N-th token is in hand. Each sample carries
  what it drafted and accepted (:func:`.speculation.counts`).

Peak memory (MLX's allocator: weights, cache and activations) is read per
repetition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pdx.contract.backend import Sample
from pdx.plugins.mlx.speculation import counts
from pdx.domain.prompt_stream import Prompts, PromptStream
from pdx.domain.workload import TestSpec

if TYPE_CHECKING:  # numpy comes with MLX; every start of pdx registers this backend without it
    import numpy as np


@dataclass
class Prepared:
    """One repetition's inputs: the cache already holding ``depth`` tokens, and the timed tokens."""

    cache: list
    prompt: object  # mx.array (batch, n_prompt), or None
    first: object  # mx.array (batch, 1): the token a tg test starts from, or None
    draft_cache: list | None = None  # the draft model's, holding the same depth


@dataclass(frozen=True)
class Draft:
    """A loaded draft model and the tokens it drafts per pass of the target."""

    model: object
    num_draft_tokens: int


def token_rows(test: TestSpec, prompts: Prompts) -> tuple[np.ndarray | None, ...]:
    """What the model is fed for one repetition, as (batch, tokens) int32 arrays: the depth, the
    prompt and the token each sequence's decode starts from (None where the test has none; after a
    prompt, decode starts from the token the prompt's logits give)."""
    import numpy as np

    rows = lambda ids: np.array(ids, dtype=np.int32).reshape(test.batch, -1)  # noqa: E731
    depth = rows([prompts.depth] * test.batch) if test.depth else None
    prompt = rows(prompts.prompts) if test.n_prompt else None
    first = rows([d[:1] for d in prompts.decode]) if test.n_gen else None
    return depth, prompt, first


class Measure:
    def __init__(self, mx, model, vocab: int, prefill_step_size: int, seed: int, draft: Draft | None = None) -> None:
        from mlx_lm.models.cache import make_prompt_cache

        self.mx, self.model, self.vocab, self.step, self.draft = mx, model, vocab, prefill_step_size, draft
        self.make_cache = lambda: make_prompt_cache(model)
        self.make_draft_cache = lambda: make_prompt_cache(draft.model) if draft else None
        self.prompts = PromptStream(seed, vocab)

    def fill(self, cache: list, tokens, model=None) -> None:
        """Put ``tokens`` (batch, n) into the cache of ``model`` (the target's by default), chunk by
        chunk; no logits are evaluated."""
        mx, model = self.mx, model or self.model
        for start in range(0, tokens.shape[1], self.step):
            model(tokens[:, start:start + self.step], cache=cache)
            mx.eval([c.state for c in cache])
            mx.clear_cache()

    def prefill(self, cache: list, tokens):
        """The prompt into the cache; returns the last token's logits, evaluated."""
        self.fill(cache, tokens[:, :-1])
        logits = self.model(tokens[:, -1:], cache=cache)[:, -1, :]
        self.mx.eval(logits)
        return logits

    def decode(self, cache: list, y, steps: int):
        """``steps`` dependent single-token passes from ``y`` (batch, 1); returns the last token, evaluated."""
        mx = self.mx
        for _ in range(steps):
            logits = self.model(y, cache=cache)
            y = mx.argmax(logits[:, -1, :], axis=-1, keepdims=True)
            mx.async_eval(y)
        mx.eval(y)
        return y

    def speculate(self, ready: Prepared, y, steps: int) -> dict:
        """``steps`` tokens from ``y`` (1, 1) by mlx-lm's speculative loop; returns what it drafted and
        accepted. Its tokens arrive as Python ints, so the last is evaluated when the loop ends."""
        from mlx_lm.generate import speculative_generate_step

        mx, draft = self.mx, self.draft
        # its default stream is the one of the device at mlx-lm's import; -o device chose another
        stream = mx.default_stream(mx.default_device())
        loop = speculative_generate_step(y.reshape(-1), self.model, draft.model, stream,
                                         num_draft_tokens=draft.num_draft_tokens, max_tokens=steps,
                                         prompt_cache=ready.cache + ready.draft_cache, prefill_step_size=self.step)
        flags = [from_draft for _, _, from_draft in loop]
        return counts(flags, steps, draft.num_draft_tokens)

    def caches(self, depth) -> tuple[list, list | None]:
        """Fresh caches, the target's and the draft's (None without one), each holding ``depth``
        (batch, n), or nothing where it is None."""
        cache, draft_cache = self.make_cache(), self.make_draft_cache()
        if depth is not None:
            self.fill(cache, depth)
            if draft_cache is not None:
                self.fill(draft_cache, depth, self.draft.model)
        return cache, draft_cache

    def prepare(self, test: TestSpec) -> Prepared:
        mx = self.mx
        depth, prompt, first = (None if a is None else mx.array(a) for a in token_rows(test, self.prompts.next(test)))
        cache, draft_cache = self.caches(depth)
        mx.eval([x for x in (prompt, first) if x is not None])
        return Prepared(cache, prompt, first, draft_cache)

    def once(self, test: TestSpec) -> Sample:
        mx = self.mx
        mx.reset_peak_memory()
        ready = self.prepare(test)
        y = ready.first
        t0 = time.perf_counter_ns()
        if ready.prompt is not None:
            logits = self.prefill(ready.cache, ready.prompt)
            if ready.draft_cache is not None:  # the draft cannot draft before it has read the prompt
                self.fill(ready.draft_cache, ready.prompt, self.draft.model)
            y = mx.argmax(logits, axis=-1, keepdims=True)
        t1 = time.perf_counter_ns()
        counted = {}
        if test.n_gen and ready.draft_cache is not None:
            counted["speculation"] = self.speculate(ready, y, test.n_gen)
        elif test.n_gen:
            self.decode(ready.cache, y, test.n_gen)
        t2 = time.perf_counter_ns()
        return Sample.timed(test, t0, t1, t2, {"peak_memory_bytes": mx.get_peak_memory(),
                                               "kv_offset": ready.cache[0].offset, **counted})
