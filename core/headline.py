"""A run's headline tests: the one rule every list, page and hub reads a run's pp and tg figure by.

The headline of a phase is a test measured at depth 0 and batch 1 (what a single user sees on an
empty context, and what every other machine's headline is comparable with): for prefill the pp
test of the most prompt tokens, for decode ``tg128`` (llama-bench's classic row) or else the first
tg test. A run without such a test has no headline for that phase: a figure at depth or batch is
not shown as if it were one. A selection of runs (a site's comparison, :mod:`pdx.reports.groups`)
picks among the same candidates the test most of its runs share.
"""

from __future__ import annotations

CLASSIC_DECODE = "tg128"


def rate(test: dict) -> float | None:
    """A test's mean rate, None where it has none."""
    return ((test.get("stats") or {}).get("rate") or {}).get("mean")


def candidate(test: dict) -> bool:
    """Whether a test can be a headline: measured, at depth 0 and batch 1."""
    return test["status"] == "ok" and bool(rate(test)) and test.get("batch", 1) == 1 and test.get("depth", 0) == 0


def measured(run: dict, kind: str, batch: int | None = None, depth: int | None = None) -> list[dict]:
    """The measured tests of ``kind`` (at ``batch`` and ``depth`` where given), in the run's order."""
    return [t for t in run["tests"] if t["kind"] == kind and t["status"] == "ok" and rate(t)
            and (batch is None or t.get("batch", 1) == batch) and (depth is None or t.get("depth", 0) == depth)]


def headline_test(run: dict, kind: str) -> dict | None:
    """The run's headline test of ``kind`` ("pp" or "tg"), None where it has none."""
    tests = [t for t in run["tests"] if t["kind"] == kind and candidate(t)]
    if not tests:
        return None
    if kind == "pp":
        return max(tests, key=lambda t: t["n_prompt"])
    return next((t for t in tests if t["name"] == CLASSIC_DECODE), tests[0])
