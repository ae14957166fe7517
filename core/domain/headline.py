"""A run's headline tests: the one rule every list, page and hub reads a run's pp and tg figure by,
and the one rule of which runs may give a headline at all (:func:`left_out`).

The headline of a phase is a test measured at depth 0 and batch 1 (what a single user sees on an
empty context, and what every other machine's headline is comparable with): for prefill the pp
test of the most prompt tokens, for decode ``tg128`` (llama-bench's classic row) or else the first
tg test. A run without such a test has no headline for that phase: a figure at depth or batch is
not shown as if it were one. A selection of runs (a site's comparison, :mod:`pdx.reports.groups`)
picks among the same candidates the test most of its runs share.

Only a valid run gives a headline. Leaderboards, "best", "what to buy", the hub's pages and
``pdx submit`` leave out a run any of whose tests (of any kind) is

- above its ceiling (``ceilings.above_ceiling``, the test's or a phase's): a measurement error or
  wrong hardware figures, not a result;
- unable to fit (``ceilings.unfit``): its model and cache exceed the memory it says it ran in, so its
  figure times work that was never done;
- noisy: the coefficient of variation of its rate above :data:`NOISY_CV`;
- overloaded, for a serving test: a request failed, the open-loop watch stopped it over-saturated
  (:mod:`pdx.domain.serving.saturation`), or its requests queued: the median TTFT at least
  :data:`QUEUED_FACTOR` times the fastest request's *and* half or more of the median E2EL (the
  median request spent most of its life waiting for the server to start it). The capacity and
  stall scenarios push past the knee on purpose and are judged by their own figures.

and each of them says how many runs it left out and why (:func:`left_out_note`).
"""

from __future__ import annotations

from collections import Counter

CLASSIC_DECODE = "tg128"
NOISY_CV = 0.05  # a rate whose coefficient of variation is above this is noisy: flagged, and no headline
QUEUED_FACTOR = 4.0  # median TTFT / fastest TTFT from which a serving test's requests queued
ABOVE, UNFIT, NOISY, OVERLOADED = "above its ceiling", "cannot fit in memory", "noisy", "overloaded"
_PLURAL = {ABOVE: "above their ceiling"}
_PUSHED_ON_PURPOSE = ("capacity", "stall")
# The rule in words, where a page says what it left out.
RULE = (f"a run with a test above its ceiling, unable to fit in memory, noisy (CV over {NOISY_CV:.0%}) or, "
        "serving, of an overloaded server gives no headline")


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


def _above(test: dict) -> bool:
    record = test.get("ceilings") or {}
    return any(entry.get("above_ceiling") for entry in (record, *(record.get("phases") or {}).values()))


def _overloaded(test: dict) -> str | None:
    """Why a serving test's figures are an overloaded server's, or None (the rule above)."""
    stats = test.get("stats") or {}
    if (test.get("spec") or {}).get("scenario") in _PUSHED_ON_PURPOSE:
        return None
    if stats.get("failed"):
        return f"{stats['failed']} of {stats.get('requests') or '?'} requests failed"
    if stats.get("saturation"):
        return "the server fell behind its schedule (stopped over-saturated)"
    ttft, e2el = stats.get("ttft_ms") or {}, stats.get("e2el_ms") or {}
    median, fastest, whole = ttft.get("median"), ttft.get("min"), e2el.get("median")
    if median and fastest and whole and median >= QUEUED_FACTOR * fastest and median >= whole / 2:
        return (f"requests queued: median TTFT {median / 1e3:.3g} s is {median / fastest:.0f}x the fastest and "
                f"{median / whole:.0%} of the median E2EL {whole / 1e3:.3g} s")
    return None


def problem_of(test: dict, max_cv: float = NOISY_CV) -> tuple[str, str] | None:
    """(kind, words) of what keeps a test's run from giving a headline: :data:`ABOVE`, :data:`UNFIT`,
    :data:`NOISY` or :data:`OVERLOADED` (the rule of this module's docstring); None for a valid test. ``test``
    carries its stats (:mod:`pdx.reports.results`)."""
    if test.get("status") != "ok":
        return None
    if _above(test):
        return ABOVE, f"test {test['name']} is above its ceiling"
    if unfit := (test.get("ceilings") or {}).get("unfit"):
        return UNFIT, f"test {test['name']} {unfit}"
    cv = (test.get("stats") or {}).get("cv")
    if cv is not None and cv > max_cv:
        return NOISY, f"test {test['name']} is noisy: CV {cv:.1%} is over {max_cv:.1%}"
    if test.get("kind") == "serve" and (why := _overloaded(test)):
        return OVERLOADED, f"test {test['name']} is overloaded: {why}"
    return None


def problems(run: dict, max_cv: float = NOISY_CV) -> list[tuple[str, str]]:
    """(kind, words) for each of the run's tests that keeps it from giving a headline."""
    return [found for test in run["tests"] if (found := problem_of(test, max_cv))]


def left_out(run: dict) -> str | None:
    """Why a run gives no headline (:data:`ABOVE`, :data:`UNFIT`, :data:`NOISY`, :data:`OVERLOADED`: its first
    test's problem), None for a valid run. A run's listing (a site's) carries it made, as
    ``left_out``."""
    if "left_out" in run:
        return run["left_out"]
    found = problems(run)
    return found[0][0] if found else None


def left_out_note(reasons: list[str | None]) -> str | None:
    """"1 run left out: above its ceiling", "3 runs left out: 2 noisy, 1 overloaded" for each run's
    :func:`left_out`; None where none was."""
    counted = Counter(reason for reason in reasons if reason)
    total = sum(counted.values())
    if not total:
        return None
    runs = f"{total} run{'s' if total != 1 else ''} left out"
    if len(counted) == 1 and total == 1:
        return f"{runs}: {next(iter(counted))}"
    return f"{runs}: " + ", ".join(f"{n} "
                                   f"{_PLURAL.get(kind, kind) if n > 1 else kind}" for kind, n in counted.most_common())
