"""Runs flattened into the rows that tables and charts show: one per measured phase.

A ``pp`` test measures prefill and a ``tg`` test decode; a ``pp+tg`` test is
one blended figure and, when the backend timed the two apart, a prefill and
a decode figure of its own. Ceilings, where the run stores them, ride on the
row of their phase; where it does not, they are ``None`` and every view
leaves them out.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

PREFILL, DECODE, BLENDED = "prefill", "decode", "prefill+decode"
PHASES = (PREFILL, DECODE, BLENDED)
PHASE_OF_KIND = {"pp": PREFILL, "tg": DECODE, "pg": BLENDED}
_SPLIT_STATS = ((PREFILL, "prompt_rate"), (DECODE, "gen_rate"))


@dataclass(frozen=True, slots=True)
class Ceiling:
    """The lower of a phase's two bounds, as stored with the result."""

    rate: float  # tokens/s the hardware allows
    bound: str | None  # "memory" or "compute"; None when one bound is unknown
    fraction: float | None  # measured / ceiling
    memory_rate: float | None = None
    compute_rate: float | None = None

    @property
    def exceeded(self) -> bool:
        """A measured rate above its ceiling is a measurement or catalog error."""
        return self.fraction is not None and self.fraction > 1.0


@dataclass(frozen=True, slots=True)
class Row:
    run_id: str
    test: str
    phase: str
    depth: int
    batch: int
    status: str
    rate: float | None = None  # mean tokens/s, all sequences together
    ci95: float | None = None
    median: float | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0
    per_sequence: float | None = None
    ceiling: Ceiling | None = None
    part: bool = False  # a phase split out of a pp+tg test
    error: str | None = None
    reported: bool = False  # the importing tool's own summary, no samples: flagged wherever it shows
    j_per_token: float | None = None  # joules per token of the test's phase, where a meter read it

    @property
    def ok(self) -> bool:
        return self.measured is not None

    @property
    def measured(self) -> float | None:
        """The rate of a test that measured one (ok), else None: the one rule readers take a row's figure by."""
        return self.rate if self.status == "ok" else None


def ceiling_of(test: dict, phase: str) -> Ceiling | None:
    """The stored ceiling of one phase of a test, if the run has one.

    ``test["ceilings"]`` (pdx.domain.ceilings) holds the test's own ceiling, bound and
    fraction at its top level and each phase's bounds under ``phases``; a
    ``pp+tg`` test's top level is its blended figure and its phases carry their
    own fractions. Runs made without ceilings have none.
    """
    record = test.get("ceilings") or {}
    phases = record.get("phases") or {}
    own = PHASE_OF_KIND.get(test.get("kind") or "")
    entry = record if phase == own else phases.get(phase) or {}
    bounds = phases.get(phase) if phase == own and len(phases) == 1 else entry
    if not entry.get("ceiling"):
        return None
    bounds = bounds or {}
    return Ceiling(rate=entry["ceiling"], bound=entry.get("bound"), fraction=entry.get("fraction"),
                   memory_rate=bounds.get("memory_bound"), compute_rate=bounds.get("compute_bound"))


def _row(run_id: str, test: dict, phase: str, summary: dict | None, part: bool = False) -> Row:
    base = dict(run_id=run_id, test=test["name"], phase=phase, depth=test["depth"], batch=test["batch"],
                status=test["status"], part=part, error=test.get("error"), ceiling=ceiling_of(test, phase),
                reported=bool((test.get("stats") or {}).get("reported")))
    if test["status"] != "ok" or not summary:
        return Row(**base)
    batch = test["batch"] or 1
    energy = None if part else ((test.get("stats") or {}).get("energy") or {}).get("j_per_token")
    return Row(**base, j_per_token=energy, rate=summary["mean"], ci95=summary.get("ci95"), median=summary.get("median"),
               low=summary.get("min"), high=summary.get("max"), n=summary.get("n") or 0,
               per_sequence=summary["mean"] / batch)


def rows_of_test(run_id: str, test: dict) -> list[Row]:
    """pp, tg and pp+tg tests; other kinds (serving scenarios) are drawn from their requests instead."""
    if test.get("kind") not in PHASE_OF_KIND:
        return []
    stats = test.get("stats") or {}
    rows = [_row(run_id, test, PHASE_OF_KIND[test["kind"]], stats.get("rate"))]
    for phase, key in _SPLIT_STATS:
        if key in stats:
            rows.append(_row(run_id, test, phase, stats[key], part=True))
    return rows


# Pages ask for a run's rows many times (tables, charts, leaderboards); runs are read-only once
# read, so inside :func:`keeping_rows` (a site build, a report) each run's rows are kept by its id,
# with the run itself, for the length of that build: for every run of a community's site (a store
# smaller than the site is emptied, and refilled, on every pass over it). Outside one, nothing is kept.
_KEPT: ContextVar[dict[str, tuple[dict, list[Row]]] | None] = ContextVar("pdx_kept_rows", default=None)
_KEPT_LIMIT = 250_000


@contextmanager
def keeping_rows() -> Iterator[None]:
    """Keep each run's rows while the block runs, apart from any outer block's: what it keeps goes at its end."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def run_rows(run: dict) -> list[Row]:
    kept = _KEPT.get()
    hit = kept.get(run["id"]) if kept is not None else None
    if hit is not None and hit[0] is run:  # the same run read twice is two objects: each its own rows
        return hit[1]
    rows = [row for test in run["tests"] for row in rows_of_test(run["id"], test)]
    if kept is not None:
        if len(kept) >= _KEPT_LIMIT:
            kept.clear()
        kept[run["id"]] = (run, rows)
    return rows


def forget_run(run: dict) -> None:
    """Let go of one run kept for its rows (a site keeps few of its runs whole)."""
    kept = _KEPT.get()
    if kept is None:
        return
    hit = kept.get(run["id"])
    if hit is not None and hit[0] is run:
        del kept[run["id"]]


def phase_rows(run: dict, phase: str) -> list[Row]:
    """The measured rows of one phase, pp/tg tests before split-out parts."""
    rows = [r for r in run_rows(run) if r.phase == phase and r.ok]
    return sorted(rows, key=lambda r: r.part)
