"""Figures derived from stored samples: rates and their statistics.

A rate is tokens / time for each repetition (llama-bench's samples_ts), then
summarised; for ``pp+tg`` tests the two phases are also rated on their own
when the backend timed them apart.
"""

from __future__ import annotations

from pdx.stats import rates, summarize


def derive_stats(test: dict) -> dict | None:
    samples = test.get("samples") or []
    if not samples:
        return None
    batch = test.get("batch", 1)
    tokens = (test["n_prompt"] + test["n_gen"]) * batch
    rate = summarize(rates(tokens, [s["ns"] for s in samples]))
    stats = {
        "tokens": tokens,
        "rate": rate.to_dict(),
        "ns": summarize([s["ns"] for s in samples]).to_dict(),
        "per_sequence_rate": rate.mean / batch,
    }
    if test["kind"] == "pg" and all(s.get("prompt_ns") and s.get("gen_ns") for s in samples):
        stats["prompt_rate"] = summarize(rates(test["n_prompt"] * batch, [s["prompt_ns"] for s in samples])).to_dict()
        stats["gen_rate"] = summarize(rates(test["n_gen"] * batch, [s["gen_ns"] for s in samples])).to_dict()
    return stats


def with_stats(run: dict, keep_samples: bool = True) -> dict:
    """The run with ``stats`` added to each test (samples dropped unless kept)."""
    for test in run["tests"]:
        test["stats"] = derive_stats(test)
        if not keep_samples:
            test.pop("samples", None)
    return run
