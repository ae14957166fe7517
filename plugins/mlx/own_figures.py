"""mlx-lm's own figures for a test, from its own generate functions, kept
beside pdx's (they are not pdx's measurement).

One sequence: ``stream_generate`` with the test's prompt (one token for a tg
test) after ``depth`` tokens put in its prompt cache, and ``max_tokens`` = the
test's generated tokens (1 for a pp test). Its ``prompt_tps`` runs until the
first generated token is in hand, so it also holds sampling and the launch of
the first decode step; its ``generation_tps`` divides the N tokens by the
time of the N-1 steps after the first (one token too many). Several
sequences: ``batch_generate``, whose stats count the last prompt token of each
sequence as generation work. With a draft model, ``stream_generate`` drafts
with it too (``draft_model``, ``num_draft_tokens``), so its figures are of the
same speculative decoding as pdx's.
"""

from __future__ import annotations

import statistics

from pdx.plugins.mlx.measure import token_rows
from pdx.domain.workload import TestSpec

_KEYS = ("prompt_tps", "generation_tps", "peak_memory", "prompt_tokens", "generation_tokens")


def _inputs(measure, test: TestSpec):
    """The depth and the prompt (a tg test: its first token) of the test's next run, from the prompt stream
    under a key of their own, so pdx's repetitions keep theirs."""
    depth, prompt, first = token_rows(test, measure.prompts.next(test, key=f"{test.name}#mlx-lm"))
    return depth, (prompt if prompt is not None else first)


def _stream(measure, tokenizer, test: TestSpec) -> dict:
    from mlx_lm import stream_generate

    depth, prompt = _inputs(measure, test)
    cache, draft_cache = measure.caches(None if depth is None else measure.mx.array(depth))
    drafting = {}
    if measure.draft:  # mlx-lm splits its prompt cache into the target's layers and then the draft's
        cache += draft_cache
        drafting = {"draft_model": measure.draft.model, "num_draft_tokens": measure.draft.num_draft_tokens}
    prompt = measure.mx.array(prompt[0])
    last = None
    for last in stream_generate(measure.model, tokenizer, prompt, max_tokens=test.n_gen or 1, prompt_cache=cache,
                                **drafting):
        pass
    return {key: float(getattr(last, key)) for key in _KEYS}


def _batch(measure, tokenizer, test: TestSpec) -> dict:
    from mlx_lm import batch_generate

    depth, prompts = _inputs(measure, test)
    caches = None
    if depth is not None:
        caches = []
        for row in depth:
            caches.append(measure.make_cache())
            measure.fill(caches[-1], measure.mx.array(row[None, :]))
    prompts = prompts.tolist()
    stats = batch_generate(measure.model, tokenizer, prompts, prompt_caches=caches, max_tokens=test.n_gen or 1).stats
    figures = {key: float(getattr(stats, key)) for key in _KEYS}
    return figures | {"prompt_time": stats.prompt_time, "generation_time": stats.generation_time}


def mlx_lm_figures(measure, tokenizer, test: TestSpec, runs: int) -> dict:
    """``runs`` runs of mlx-lm's own generate for ``test``: each run's figures and their means."""
    how = _stream if test.batch == 1 else _batch
    done = [how(measure, tokenizer, test) for _ in range(runs)]
    means = {key: statistics.fmean(r[key] for r in done) for key in ("prompt_tps", "generation_tps")}
    meaning = {"pp": "prompt_tps", "tg": "generation_tps", "pg": "prompt_tps and generation_tps"}[test.kind]
    function = "stream_generate" if test.batch == 1 else "batch_generate"
    drafting = {"num_draft_tokens": measure.draft.num_draft_tokens} if measure.draft else {}
    return {"function": function, "compare": meaning, "runs": done, **means, **drafting}


def own_rates(test: TestSpec, figures: dict) -> dict:
    """mlx-lm's rates under pdx's phase names, for tables (``pp``, ``tg``)."""
    rates = {"pp": figures["prompt_tps"], "tg": figures["generation_tps"]}
    wanted = {"pp": ("pp",), "tg": ("tg",), "pg": ("pp", "tg")}[test.kind]
    return {"label": "mlx-lm"} | {k: rates[k] for k in wanted}
