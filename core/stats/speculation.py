"""What speculative decoding did in a test, from the engine's own per-request counters.

A speculating server drafts tokens (a small draft model, n-gram lookup, EAGLE, MTP) and lets one
forward pass of the target model verify several: each pass yields the drafts it accepts plus one
token of its own. llama-server reports each request's ``draft_n`` (tokens drafted) and
``draft_n_accepted`` in its timings; nothing here is guessed from the rate. From their sums over
the test's requests (every sample, warm-ups excluded):

- ``acceptance``: accepted / drafted;
- ``target_passes``: output tokens - accepted (each pass's own token);
- ``tokens_per_pass``: output tokens / target passes (1 without speculation);
- ``target_passes_per_token`` and ``drafted_per_token``: what a decode ceiling counts per output
  token (:func:`pdx.ceilings.speculative`).
"""

from __future__ import annotations

from typing import Iterable

# A request's counters under its engine figures: (where, drafted, accepted, output tokens).
COUNTERS = (("timings", "draft_n", "draft_n_accepted", "predicted_n"),)


def _requests(test: dict) -> Iterable[dict]:
    """The test's request records: stored with the test, or (before storing) with each sample."""
    if test.get("requests"):
        yield from test["requests"]
        return
    for sample in test.get("samples") or []:
        yield from sample.get("requests") or []


def _counted(request: dict) -> tuple[int, int, int] | None:
    for where, drafted, accepted, output in COUNTERS:
        figures = (request.get("engine") or {}).get(where)
        if not isinstance(figures, dict) or drafted not in figures:
            continue
        values = (figures.get(drafted), figures.get(accepted), figures.get(output, request.get("n_gen")))
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
            return values
    return None


def speculation_stats(test: dict) -> dict | None:
    """The test's speculation figures, or None where no request carries speculation counters (an
    engine that does not speculate, or one that does not say)."""
    drafted = accepted = tokens = 0
    seen = False
    for request in _requests(test):
        if request.get("role") == "warmup" or request.get("status", "ok") != "ok":
            continue
        counted = _counted(request)
        if counted is None:
            continue
        seen = True
        drafted, accepted, tokens = drafted + counted[0], accepted + counted[1], tokens + counted[2]
    if not seen or not tokens:
        return None
    accepted = min(accepted, drafted, tokens)
    passes = max(tokens - accepted, 1)
    return {"drafted": drafted, "accepted": accepted, "tokens": tokens,
            "acceptance": accepted / drafted if drafted else None,
            "target_passes": passes, "tokens_per_pass": tokens / passes,
            "target_passes_per_token": passes / tokens, "drafted_per_token": drafted / tokens}
