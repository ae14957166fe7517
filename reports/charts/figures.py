"""Chart data from runs: the records that :mod:`pdx.reports.charts.specs` plots.

Each function takes runs and a way to name a series (a run, a system, a
model) and returns plain records, or nothing when the runs hold nothing to
plot (one depth is no depth sweep; one batch size is no batch sweep).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Iterable

from pdx.reports.rows import DECODE, Row, run_rows
from pdx.domain.serving.metrics import percentile
from pdx.domain.serving.records import per_token_gaps

Namer = Callable[[dict], str]
# A sweep point keeps the per-sequence rate within this share of batch 1's
# while the hardware still serves extra sequences almost for free.
KNEE_SHARE = 0.8


def base_test(name: str) -> str:
    """``pp512@d4096/b8`` -> ``pp512``: the test without its depth and batch."""
    return re.split(r"[@/]", name, maxsplit=1)[0]


def fraction_note(row: Row) -> str | None:
    c = row.ceiling
    if c is None or c.fraction is None:
        return None
    flag = " (above ceiling: check figures)" if c.exceeded else ""
    of = f"{c.bound} bound" if c.bound else "ceiling"
    return f"{c.fraction * 100:.0f}% of {of}{flag}"


def bar_record(label: str, row: Row, series: str = "") -> dict:
    ci, rate = row.ci95 or 0.0, row.rate
    has_ci = row.ci95 is not None and row.n > 1 and rate is not None
    return {"label": label, "series": series, "phase": row.phase, "rate": rate,
            "lo": max(rate - ci, 0.0) if has_ci and rate is not None else None,
            "hi": rate + ci if has_ci and rate is not None else None,
            "ceiling": row.ceiling.rate if row.ceiling else None, "note": fraction_note(row)}


def run_bars(runs: Iterable[dict], namer: Namer | None = None) -> list[dict]:
    """Every measured phase of every run: label = test, series = the run."""
    return [bar_record(r.test, r, namer(run) if namer else "") for run in runs for r in run_rows(run) if r.ok]


def latest_rows(runs: Iterable[dict], namer: Namer) -> dict[tuple[str, str, str], tuple[dict, Row]]:
    """The newest measurement of each (series, test, phase); runs come newest first."""
    found: dict[tuple[str, str, str], tuple[dict, Row]] = {}
    for run in runs:
        series = namer(run)
        for row in run_rows(run):
            if row.ok:
                found.setdefault((series, row.test, row.phase), (run, row))
    return found


Latest = dict[tuple[str, str, str], tuple[dict, Row]]


def system_bars(runs: Iterable[dict], namer: Namer, tests: dict[str, str], latest: Latest | None = None) -> list[dict]:
    """One bar per series for each headline test (``{phase: test name}``), fastest decoder first.
    ``latest``: :func:`latest_rows` of the same runs and namer, where the caller has it."""
    latest = latest_rows(runs, namer) if latest is None else latest
    chosen = {(series, phase): row for (series, name, phase), (_, row) in latest.items() if tests.get(phase) == name}
    speed = {series: row.rate for (series, phase), row in chosen.items() if phase == DECODE and row.rate is not None}
    order = sorted({series for series, _ in chosen}, key=lambda s: (-speed.get(s, 0.0), s))
    return [bar_record(series, chosen[series, phase]) for phase in tests for series in order
            if (series, phase) in chosen]


def depth_points(runs: Iterable[dict], namer: Namer, latest: Latest | None = None) -> list[dict]:
    """Rate vs depth at batch 1, per series and base test, where a series has two depths or more."""
    groups: dict[tuple[str, str, str], dict[int, float]] = {}
    for (series, _, phase), (_, row) in (latest_rows(runs, namer) if latest is None else latest).items():
        if row.batch == 1 and not row.part and row.rate is not None:
            groups.setdefault((series, base_test(row.test), phase), {})[row.depth] = row.rate
    sweeps = {key: points for key, points in groups.items() if len(points) > 1}
    # The panel names the phase; a series names its test only when it swept two in one phase.
    tests_per = Counter((series, phase) for series, _, phase in sweeps)
    return [{"series": series if tests_per[series, phase] == 1 else f"{series} · {test}", "phase": phase,
             "depth": depth, "rate": rate}
            for (series, test, phase), points in sorted(sweeps.items()) for depth, rate in sorted(points.items())]


def batch_knee(points: dict[int, float]) -> int | None:
    """The largest batch whose per-sequence decode rate keeps KNEE_SHARE of batch 1's.

    ``points`` maps batch -> per-sequence rate. Below the knee an extra
    sequence costs the others little (the weights are read once for all);
    past it each sequence slows down.
    """
    if 1 not in points or len(points) < 2:
        return None
    knee = 1
    for batch in sorted(points):
        if points[batch] >= KNEE_SHARE * points[1]:
            knee = batch
        else:
            break
    return knee


def predicted_knee(run: dict) -> int | None:
    """The batch at which decode stops being memory-bound, as the run's ceilings predict."""
    knee = (run.get("ceiling_basis") or {}).get("knee_batch")
    return max(1, round(knee)) if knee else None


def batch_points(runs: Iterable[dict], namer: Namer, latest: Latest | None = None) -> tuple[list[dict], list[dict]]:
    """Decode rate vs batch per series, base test and depth; and the knees of each sweep."""
    groups: dict[tuple[str, str], dict[int, Row]] = {}
    owners: dict[tuple[str, str], dict] = {}
    for (series, _, phase), (run, row) in (latest_rows(runs, namer) if latest is None else latest).items():
        if phase == DECODE and not row.part:
            key = (series, f"{base_test(row.test)}" + (f"@d{row.depth}" if row.depth else ""))
            groups.setdefault(key, {})[row.batch] = row
            owners.setdefault(key, run)
    points: list[dict] = []
    knees: list[dict] = []
    sweeps = {key: by_batch for key, by_batch in groups.items() if len(by_batch) > 1}
    per_series = Counter(series for series, _ in sweeps)
    for key, by_batch in sorted(sweeps.items()):
        label = " · ".join(key) if per_series[key[0]] > 1 else key[0]
        points.extend({"series": label, "batch": b, "aggregate": r.rate, "per_sequence": r.per_sequence}
                      for b, r in sorted(by_batch.items()))
        knee = batch_knee({b: r.per_sequence for b, r in by_batch.items() if r.per_sequence is not None})
        if knee:
            knees.append({"series": label, "batch": knee, "kind": "measured knee"})
        predicted = predicted_knee(owners[key])
        if predicted:
            knees.append({"series": label, "batch": predicted, "kind": "predicted knee"})
    return points, knees


def _spread(series: str, metric: str, values_ns: list[float]) -> dict:
    ordered = sorted(v / 1e6 for v in values_ns)
    return {"series": series, "metric": metric, "n": len(ordered), "min": ordered[0],
            **{f"p{p}": percentile(ordered, p) for p in (25, 50, 75, 99)},
            "max": ordered[-1]}


def serving_tests(run: dict) -> list[dict]:
    """A run's tests that carry serving data: per-request records, or a capacity search."""
    return [t for t in run["tests"] if t.get("requests") or (t.get("stats") or {}).get("capacity")]


def newest_serving(runs: Iterable[dict], namer: Namer) -> Iterable[tuple[dict, dict, str]]:
    """(run, test, series label) of the newest serving measurement of each series and test; runs
    come newest first. A series measured many times is drawn once, as its newest figures are."""
    seen = set()
    for run in runs:
        name = namer(run)
        for test in serving_tests(run):
            if (name, test["name"]) not in seen:
                seen.add((name, test["name"]))
                yield run, test, f"{name} · {test['name']}"


def latency_points(runs: Iterable[dict], namer: Namer) -> list[dict]:
    """TTFT and ITL distributions (ms) per series and test, where runs carry per-request records.

    A serving test's ``requests`` (pdx.domain.serving) keep each request's first-token
    time from its send (``first_ns``) and every streamed event's arrival
    (``events``: [ns from send, tokens]); TTFT is the former, ITL the gaps
    between tokens (pdx.domain.serving.records: a chunk of k tokens is k gaps). Distributions are
    summarised here (quartiles, p99, extremes) so a chart of thousands of requests stays small.
    """
    out: list[dict] = []
    for _, test, series in newest_serving(runs, namer):
        ok = [r for r in test.get("requests") or [] if r.get("status") == "ok"]
        ttft = [r["first_ns"] for r in ok if r.get("first_ns") is not None]
        itl = [gap for r in ok for gap in per_token_gaps(r.get("events") or [])]
        out.extend(_spread(series, metric, values) for metric, values in (("TTFT", ttft), ("ITL", itl)) if values)
    return out
