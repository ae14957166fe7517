"""Over-saturation: the test that stops an open-loop run once the server is not keeping up.

Past the knee, an open-loop run only grows its queue: every further second
adds requests that wait, and the figures say nothing new. The stated test,
checked each time a request ends, once the run is ``window_s`` old, over the
last ``window_s`` seconds:

- the queue grew: the A requests that became due by their schedule
  outnumber the D that finished by at least ``Z_MIN`` standard deviations of
  a server that keeps up (A - D >= Z_MIN * sqrt(A + D): arrivals and
  departures as Poisson counts of equal mean), and by at least ``MIN_RISE``;
- the scheduled-time TTFT of the requests that ended in the window rises:
  its least-squares slope has a t-statistic of at least ``T_MIN``.

Both together: a queue that grows while latency stays flat is a burst being
absorbed; latency that drifts with a steady queue is the server slowing, not
falling behind. The TTFT series needs ``MIN_POINTS`` points in the window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

T_MIN = 3.0
Z_MIN = 3.0
MIN_RISE = 2
MIN_POINTS = 8
DEFAULT_WINDOW_S = 10.0


def slope(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares slope of y on x and its t-statistic (inf for a perfect line, 0 for a flat or short one)."""
    n = len(points)
    if n < 3:
        return 0.0, 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx <= 0:
        return 0.0, 0.0
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    residual = sum((y - my - b * (x - mx)) ** 2 for x, y in points)
    se = math.sqrt(residual / (n - 2) / sxx)
    if se == 0:
        return b, math.copysign(math.inf, b) if b else 0.0
    return b, b / se


@dataclass
class SaturationWatch:
    window_s: float = DEFAULT_WINDOW_S
    counts: list[tuple[float, int, int]] = field(default_factory=list)  # (s since start, due so far, ended so far)
    ttft: list[tuple[float, float]] = field(default_factory=list)  # (s since start, scheduled-time TTFT in ms)

    def observe(self, now_s: float, due: int, ended: int, ttft_sched_ms: float | None) -> dict | None:
        """Add one request's end; return the verdict (a dict) when the run is over-saturated."""
        self.counts.append((now_s, due, ended))
        if ttft_sched_ms is not None:
            self.ttft.append((now_s, ttft_sched_ms))
        return verdict(self.counts, self.ttft, now_s, self.window_s)


def verdict(counts: list[tuple[float, int, int]], ttft: list[tuple[float, float]], now_s: float,
            window_s: float) -> dict | None:
    """The test above on the observations so far (``counts`` ascending in time)."""
    if window_s <= 0 or now_s < window_s or not counts:
        return None
    start = now_s - window_s
    then = next(c for c in counts if c[0] >= start)
    last = counts[-1]
    arrived, ended = last[1] - then[1], last[2] - then[2]
    growth = arrived - ended
    if growth < max(MIN_RISE, Z_MIN * math.sqrt(max(0, arrived + ended))):  # counts never fall; hand-made ones may
        return None
    t = [p for p in ttft if p[0] >= start]
    if len(t) < MIN_POINTS:
        return None
    t_slope, t_t = slope(t)
    if t_slope <= 0 or t_t < T_MIN:
        return None
    return {"at_s": round(now_s, 3), "window_s": window_s, "due_in_window": arrived, "ended_in_window": ended,
            "queue_growth": growth, "queue_z": round(growth / math.sqrt(arrived + ended), 2),
            "ttft_slope_ms_per_s": round(t_slope, 3), "ttft_t": round(t_t, 2) if math.isfinite(t_t) else None,
            "test": f"over the last {window_s:g} s, due - ended >= max({MIN_RISE}, {Z_MIN:g} sqrt(due + ended)) "
                    f"and scheduled TTFT rising (slope t >= {T_MIN:g})"}
