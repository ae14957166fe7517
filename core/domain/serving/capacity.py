"""Capacity under an SLO: the largest request rate (open loop) or concurrency
(closed loop) at which TTFT, ITL, TPOT and E2EL still meet their targets at
a percentile.

The search brackets: from a start (the rate or concurrency given, or else
one request's service rate, 1 / E2EL of the warm-up request), it doubles
while the SLO holds, or halves while it breaks, until a holding and a
breaking point are known; it then bisects (geometrically for rates) until
the bracket is within the stated precision (``hi / lo - 1 <= precision``;
for concurrency also ``hi - lo <= 1``), then measures both ends of the
bracket once more. Unless told, a point sends about ``POINT_S`` seconds of
arrivals (at least ``POINT_MIN_REQUESTS``): a queue needs time to build, and a
short burst above capacity would pass. A point holds only if every measurement at it held, so a
repeat that disagrees widens the bracket rather than hiding the noise.

A point breaks when a request fails (``errors``), when the open-loop run had
to stop over-saturated (the queue grew: ``saturation``), or when a metric's
percentile is over its target. A point stops sending as soon as its verdict is
certain (:class:`SloWatch`: so many of its planned requests are already over a
per-request target that the percentile cannot come back under it), so the
points above capacity, the slow ones, cost no more than they must. What broke first is the cause at the lowest
breaking point: a TTFT (or E2EL) break is the prefill side's (or queueing's),
an ITL or TPOT break the decode side's. TTFT and E2EL are judged from the
scheduled send (open loop), so the wait for a slot counts.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

from pdx.contract.errors import PdxError
from pdx.domain.serving.metrics import parse_slo

DEFAULT_PERCENTILE = 90.0
DEFAULT_PRECISION = 0.25
DEFAULT_MAX_POINTS = 12
DEFAULT_BUDGET_S = 480.0  # the search starts no new point after this long (a slow server still gets an answer)
ROUNDS = 3  # bisect-and-repeat rounds: a repeat that disagrees reopens the bracket, this often at most
POINT_S = 10.0  # a point's arrivals span about this long (a queue needs time to show), with
POINT_MIN_REQUESTS = 4  # at least this many requests (closed loop: at least 4 per stream); more would make
# the points of a slow server's low rates minutes long


def point_requests(x: float, closed: bool) -> int:
    """Requests of one point when the run gives no count or duration."""
    return max(POINT_MIN_REQUESTS, 4 * int(x)) if closed else max(POINT_MIN_REQUESTS, math.ceil(x * POINT_S))
SIDES = {"ttft": "prefill", "e2el": "prefill", "itl": "decode", "tpot": "decode", "errors": "errors",
         "saturation": "prefill"}
# The figure each SLO metric is judged on: the scheduled-time one where the run has a schedule.
JUDGED = {"ttft": ("ttft_sched_ms", "ttft_ms"), "e2el": ("e2el_sched_ms", "e2el_ms"), "itl": ("itl_ms",),
          "tpot": ("tpot_ms",)}


def parse_capacity_slo(text: str | None) -> tuple[dict[str, float], float]:
    """``ttft=500ms,itl=50ms,p=99`` -> ({"ttft": 500, "itl": 50}, 99.0); the percentile defaults to 90."""
    if not text:
        raise PdxError("--scenario capacity needs an SLO", "give --slo METRIC=TIME[,...][,p=PERCENTILE], "
                                                           "e.g. --slo ttft=2s,itl=200ms,p=99")
    items = [item for item in text.split(",") if item.strip()]
    p_items = [item for item in items if item.strip().lower().startswith("p=")]
    percentile = DEFAULT_PERCENTILE
    for item in p_items:
        value = item.strip()[2:]
        try:
            percentile = float(value)
        except ValueError:
            percentile = math.nan
        if not 0 < percentile <= 100:
            raise PdxError(f"--slo: cannot read {item.strip()!r}", "give the percentile as p=N, 0 < N <= 100")
    slo = parse_slo(",".join(item for item in items if item not in p_items))
    if not slo:
        raise PdxError("--slo: give at least one target besides the percentile", "e.g. --slo ttft=2s,p=99")
    return slo, percentile


# Per-request figures (ms) of the metrics judged one value per request; ITL pools every gap of every
# request, so no single request settles it.
_PER_REQUEST = {
    "ttft": lambda r: r.ttft_sched_ns if r.scheduled_ns is not None else r.ttft_ns,
    "e2el": lambda r: r.e2el_sched_ns if r.scheduled_ns is not None else r.end_ns,
    "tpot": lambda r: r.tpot_ns,
}


def certain_over(planned: int, percentile: float) -> int:
    """How many of ``planned`` values over a limit put their ``percentile`` over it whatever the rest
    are: the percentile (linear between closest ranks) reads ranks floor(p (N - 1)) and above."""
    return planned - math.floor((planned - 1) * percentile / 100)  # the rank serving_stats reads


@dataclass
class SloWatch:
    """Counts, request by request as they end, those over each per-request SLO target; says when a
    point has broken for certain. A failed request breaks it at once (errors break a point)."""

    slo: dict[str, float]
    percentile: float
    planned: int
    over: dict[str, int] = field(default_factory=dict)

    def observe(self, record) -> dict | None:
        if not record.ok:
            return {"metric": "errors", "test": f"request {record.idx} failed"}
        need = certain_over(self.planned, self.percentile)
        for metric, limit in self.slo.items():
            value = _PER_REQUEST[metric](record) if metric in _PER_REQUEST else None
            if value is not None and value / 1e6 > limit:
                self.over[metric] = self.over.get(metric, 0) + 1
                if self.over[metric] >= need:
                    return {"metric": metric, "over": self.over[metric], "of_planned": self.planned,
                            "test": f"{self.over[metric]} of {self.planned} planned requests over the {metric} "
                                    f"target: its p{self.percentile:g} cannot meet it"}
        return None


def judge(stats: dict, slo: dict[str, float], percentile: float, saturated: bool,
          gave_up: dict | None = None) -> dict:
    """Whether one point's figures meet the SLO, each metric's value at the percentile, and what broke
    (``gave_up``: the :class:`SloWatch` verdict that stopped the point early, which breaks it)."""
    key = f"p{percentile:g}"
    values, over = {}, {}
    for metric, limit in slo.items():
        dist = next((stats[name] for name in JUDGED[metric] if stats.get(name)), {})
        value = dist.get(key)
        values[metric] = value
        if value is None or (isinstance(value, float) and math.isnan(value)) or value > limit:
            over[metric] = value / limit if value is not None and limit > 0 and not math.isnan(value) else math.inf
    broke = sorted(over, key=lambda m: -over[m])  # the worst first
    if gave_up and gave_up["metric"] not in broke:  # certain from the planned count, not only the sent
        broke.insert(0, gave_up["metric"])
    if saturated:
        broke.insert(0, "saturation")
    if stats.get("failed") and "errors" not in broke:
        broke.insert(0, "errors")
    return {"held": not broke, "values": values, "broke": broke}


@dataclass
class Search:
    """The bracketing search over an axis (rates: floats; concurrency: integers), measuring through ``measure``."""

    measure: Callable[[float], bool]
    start: float
    precision: float = DEFAULT_PRECISION
    integer: bool = False
    max_points: int = DEFAULT_MAX_POINTS
    floor: float = 1e-3  # rates below this are not tried (integers: 1)
    budget_s: float | None = None  # no new point starts once this long has passed (the bracket as it stands)
    tried: list[tuple[float, bool]] = field(default_factory=list)
    out_of_time: bool = False

    def __post_init__(self) -> None:
        self.started = time.monotonic()

    def _spent(self) -> bool:
        if self.budget_s is not None and time.monotonic() - self.started >= self.budget_s:
            self.out_of_time = True
        return self.out_of_time

    def _at(self, x: float) -> bool:
        if self.tried and self._spent():
            raise _OutOfTime
        held = self.measure(x)
        self.tried.append((x, held))
        return held

    def run(self) -> tuple[float | None, float | None]:
        """(lo, hi): the largest value measured to hold and the smallest measured to break (None: not found)."""
        try:
            return self._run()
        except _OutOfTime:
            return bracket(self.tried)

    def _narrow(self, lo: float, hi: float) -> bool:
        return hi / lo - 1 <= self.precision or (self.integer and hi - lo <= 1)

    def _mid(self, lo: float, hi: float) -> float:
        return (lo + hi) // 2 if self.integer else math.sqrt(lo * hi)

    def _run(self) -> tuple[float | None, float | None]:
        x = max(1, round(self.start)) if self.integer else self.start
        lo = hi = None
        if self._at(x):
            lo = x
            while hi is None and len(self.tried) < self.max_points:
                x *= 2
                lo, hi = (x, hi) if self._at(x) else (lo, x)
        else:
            hi = x
            while lo is None and len(self.tried) < self.max_points:
                x = x // 2 if self.integer else x / 2
                if x < (1 if self.integer else self.floor):
                    break
                lo, hi = (x, hi) if self._at(x) else (lo, x)
        for _ in range(ROUNDS):
            while lo is not None and hi is not None and not self._narrow(lo, hi) and len(self.tried) < self.max_points:
                mid = self._mid(lo, hi)
                lo, hi = (mid, hi) if self._at(mid) else (lo, mid)
            for end in (lo, hi):  # the boundary points once more
                if end is not None:
                    self._at(end)
            lo, hi = bracket(self.tried)
            if lo is None or hi is None or self._narrow(lo, hi):
                break
        return lo, hi


class _OutOfTime(Exception):
    pass


def bracket(tried: list[tuple[float, bool]]) -> tuple[float | None, float | None]:
    """The smallest value that ever broke, and the largest below it at which every measurement held."""
    broke = [x for x, held in tried if not held]
    hi = min(broke) if broke else None
    holding = [x for x, _ in tried if (hi is None or x < hi) and all(h for y, h in tried if y == x)]
    return (max(holding) if holding else None), hi


def summary(points: list[dict], lo: float | None, hi: float | None, axis: str, slo: dict, percentile: float,
            precision: float, out_of_time: bool = False) -> dict:
    """What the capacity test reports: the capacity with its bracket, every point, and what broke first."""
    first_break = next((p for p in sorted(points, key=lambda p: p["x"]) if not p["held"] and p["x"] == hi), None)
    broke = first_break["broke"][0] if first_break else None
    if lo is not None and hi is not None:
        capacity = math.floor(lo) if axis == "concurrency" else math.sqrt(lo * hi)
        uncertainty = (hi - lo) / 2
    else:
        capacity, uncertainty = lo, None
    return {
        "axis": axis, "slo": dict(slo), "percentile": percentile, "precision": precision,
        "capacity": capacity, "bracket": [lo, hi], "uncertainty": uncertainty,
        "broke_first": broke, "side": SIDES.get(broke) if broke else None,
        "found": lo is not None and hi is not None,
        "out_of_time": out_of_time,
        "narrow": lo is not None and hi is not None and (hi / lo - 1 <= precision or (
            axis == "concurrency" and hi - lo <= 1)),
        "note": None if lo is not None and hi is not None else (
            "the SLO held at every point tried: capacity is above the bracket" if hi is None
            else "the SLO broke at every point tried: capacity is below the lowest"),
        "points": points,
    }
