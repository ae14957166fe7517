"""What speculative decoding did in a test, from the engine's own per-request counters.

A speculating engine drafts tokens (a small draft model, n-gram lookup, EAGLE, MTP) and lets one
forward pass of the target model verify several: each pass yields the drafts it accepts plus one
token of its own. Where the counts come from, nothing here guessed from the rate:

- over HTTP, each request's engine figures: llama-server's ``timings`` (``draft_n``,
  ``draft_n_accepted``, ``predicted_n``);
- in process (and for servers that count per test, not per request), each sample's engine figures
  under ``speculation``: ``{"drafted": int, "accepted": int, "tokens": int}`` (tokens: the output
  tokens those counts cover), as a backend's ``Sample.engine`` carries them.

From their sums over the test (every sample, warm-ups excluded):

- ``acceptance``: accepted / drafted;
- ``target_passes``: output tokens - accepted (each pass's own token);
- ``tokens_per_pass``: output tokens / target passes (1 without speculation);
- ``target_passes_per_token`` and ``drafted_per_token``: what a decode ceiling counts per output
  token (:func:`pdx.domain.ceilings.speculative`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from pdx.contract.errors import ModelError, PdxError
from pdx.domain.models import identify

# n-gram lookups draft from the text so far; pdx's prompts are random ids (pdx.domain.prompt_stream), so what
# they find is repetition in what the model itself generates (greedy decoding of a random-weight model
# falls into short cycles): a run that speculates so says it with this note
NGRAM_NOTE = ("n-gram lookup drafts from the text so far: pdx's prompts are random token ids, so only "
              "repetition in the generated text is found")

def draft_identity(path: str) -> dict:
    """A draft model as a run records it (``settings["speculation"]["draft_model"]``): its identity,
    not its path alone; the decode ceiling reads its ``file_bytes``."""
    try:
        draft = identify(path)
    except (ModelError, OSError) as exc:
        raise PdxError(f"cannot read the draft model {path}: {getattr(exc, 'message', exc)}",
                       "give the draft model's file or directory as the engine takes it") from None
    return draft_record(draft)


def draft_record(draft) -> dict:
    """What a run records of a draft model already identified (a :class:`pdx.domain.models.ModelInfo`)."""
    return {"path": draft.path, "name": draft.name, "sha256": draft.sha256, "n_params": draft.n_params,
            "dtype": draft.dtype, "file_bytes": draft.file_bytes}


# A request's counters under its engine figures: (where, drafted, accepted, output tokens).
COUNTERS = (("timings", "draft_n", "draft_n_accepted", "predicted_n"),)


def _requests(test: Mapping[str, Any]) -> Iterable[dict]:
    """The test's request records: stored with the test, or (before storing) with each sample."""
    if test.get("requests"):
        yield from test["requests"]
        return
    for sample in test.get("samples") or []:
        yield from sample.get("requests") or []


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def counts_of(values: Iterable[object]) -> tuple[int, int, int] | None:
    """Three counts (drafted, accepted, output), each a whole number of 0 or more, or None."""
    drafted, accepted, tokens = (_count(v) for v in values)
    return None if drafted is None or accepted is None or tokens is None else (drafted, accepted, tokens)


def _counted(request: dict) -> tuple[int, int, int] | None:
    for where, drafted, accepted, output in COUNTERS:
        figures = (request.get("engine") or {}).get(where)
        if not isinstance(figures, dict) or drafted not in figures:
            continue
        values = counts_of((figures.get(drafted), figures.get(accepted), figures.get(output, request.get("n_gen"))))
        if values is not None:
            return values
    return None


# A sample's own counts: the keys a backend sets under Sample.engine["speculation"].
SAMPLE_KEY, SAMPLE_FIELDS = "speculation", ("drafted", "accepted", "tokens")


def _sample_counts(test: Mapping[str, Any]) -> Iterable[tuple[int, int, int]]:
    for sample in test.get("samples") or []:
        counts = (sample.get("engine") or {}).get(SAMPLE_KEY)
        if isinstance(counts, dict):
            values = counts_of(counts.get(k) for k in SAMPLE_FIELDS)
            if values is not None:
                yield values


def speculation_stats(test: Mapping[str, Any]) -> dict | None:
    """The test's speculation figures, or None where neither its samples nor its requests carry
    speculation counters (an engine that does not speculate, or one that does not say). A sample's
    own counts, where any sample has them, stand for its requests'."""
    drafted = accepted = tokens = 0
    seen = False
    for counted in _sample_counts(test):
        seen = True
        drafted, accepted, tokens = drafted + counted[0], accepted + counted[1], tokens + counted[2]
    for request in () if seen else _requests(test):
        if request.get("role") == "warmup" or request.get("status", "ok") != "ok":
            continue
        found = _counted(request)
        if found is None:
            continue
        seen = True
        drafted, accepted, tokens = drafted + found[0], accepted + found[1], tokens + found[2]
    if not seen or not tokens:
        return None
    accepted = min(accepted, drafted, tokens)
    passes = max(tokens - accepted, 1)
    return {"drafted": drafted, "accepted": accepted, "tokens": tokens,
            "acceptance": accepted / drafted if drafted else None,
            "target_passes": passes, "tokens_per_pass": tokens / passes,
            "target_passes_per_token": passes / tokens, "drafted_per_token": drafted / tokens}
