"""A power trace: every meter read on a thread at a fixed period, so the energy of any window
of the run (a repetition's timed part) is read off afterwards.

Counters step rather than flow (NVML's energy counter moves every few tens of milliseconds,
RAPL's every millisecond or so), so a window's energy is the counter interpolated linearly
between the readings around each of its ends; a window much shorter than the counter's step is
not measurable, which is why :mod:`pdx.measure.energy.session` lengthens such tests. The resolution a
meter is credited with is what the trace saw: the median time between readings that changed.
"""

from __future__ import annotations

import bisect
import statistics
import threading
import time
from typing import Sequence

from pdx.contract.meter import Meter

PERIOD_S = 0.02  # how often every meter is read; a read costs microseconds (a file, an NVML call)


class Trace:
    """Readings of ``meters`` taken every ``period`` seconds between :meth:`start` and :meth:`stop`."""

    def __init__(self, meters: Sequence[Meter], period: float = PERIOD_S) -> None:
        self.meters = list(meters)
        self.period = period
        self.times: list[int] = []  # monotonic ns
        self.values: list[list[float]] = [[] for _ in self.meters]  # joules, a list per meter
        self.failed: dict[str, str] = {}  # meter name -> why its reads stopped counting
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "Trace":
        self.read_now()
        self._thread = threading.Thread(target=self._loop, name="pdx-energy-trace", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.read_now()

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            self.read_now()

    def _read(self, index: int, meter: Meter) -> float:
        last = self.values[index][-1] if self.values[index] else 0.0
        if meter.name in self.failed:
            return last
        try:
            value = float(meter.read())
        except Exception as exc:  # a meter that fails mid-run stops counting; the benchmark goes on
            self.failed[meter.name] = f"{type(exc).__name__}: {exc}"
            return last
        if not value >= last:  # a decrease (or NaN) is a counter that wrapped unhandled or was reset
            self.failed[meter.name] = f"its counter went from {last} to {value} J"
            return last
        return value

    def read_now(self) -> None:
        """One reading of every meter, now (also called at a window's edge for a reading close to it)."""
        with self._lock:
            now = time.monotonic_ns()
            readings = [self._read(i, m) for i, m in enumerate(self.meters)]
            if self.times and now <= self.times[-1]:
                return
            self.times.append(now)
            for column, value in zip(self.values, readings):
                column.append(value)

    def _at(self, index: int, t: int) -> float | None:
        times, values = self.times, self.values[index]
        if not times or t < times[0] or t > times[-1]:
            return None
        right = bisect.bisect_left(times, t)
        if times[right] == t:
            return values[right]
        t0, t1 = times[right - 1], times[right]
        v0, v1 = values[right - 1], values[right]
        return v0 + (v1 - v0) * (t - t0) / (t1 - t0)

    def joules(self, windows: Sequence[tuple[int, int]]) -> dict[str, float] | None:
        """Each meter's joules summed over ``windows`` (monotonic ns pairs); None when a window lies
        outside the trace."""
        with self._lock:
            totals = {}
            for index, meter in enumerate(self.meters):
                total = 0.0
                for start, end in windows:
                    a, b = self._at(index, start), self._at(index, end)
                    if a is None or b is None:
                        return None
                    total += b - a
                totals[meter.name] = total
            return totals

    def resolution_s(self) -> float:
        """The coarsest meter's step: the median time between readings that changed (the read period
        where a counter changes at every reading)."""
        with self._lock:
            steps = [self.period]
            for column in self.values:
                changed = [self.times[i] for i in range(1, len(column)) if column[i] != column[i - 1]]
                gaps = [b - a for a, b in zip(changed, changed[1:])]
                if gaps:
                    steps.append(statistics.median(gaps) / 1e9)
            return max(steps)

    def forget_before(self, t: int) -> None:
        """Drop readings older than the last one before ``t`` (a long run keeps only what is still to be read)."""
        with self._lock:
            keep = max(0, bisect.bisect_right(self.times, t) - 1)
            del self.times[:keep]
            for column in self.values:
                del column[:keep]
