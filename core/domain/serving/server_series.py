"""The server's own time series while a serving test runs: its Prometheus ``/metrics`` read every
``interval_ms`` on pdx's clock, so a TTFT spike can be set against the server's queue, its KV cache and
its token counters at that moment.

A thread reads the endpoint (``requests``, as every plain call); the streams keep their own timing
(kernel receive stamps, :mod:`pdx.measure.serving.http_stream`), so the thread costs the client CPU, not
accuracy. Each reading is stamped at the midpoint of its request, ``perf_counter_ns`` like the load
run's clock, and stored from the load run's start (``t_ns``; a reading before the start is negative).

What is stored (a sample's ``engine["server_series"]``): ``interval_ms`` asked, ``every_ms`` kept (past
:data:`MAX_POINTS` readings every other one is dropped and the spacing doubles, so a long test stays
bounded), ``failed`` readings, ``t_ns`` and one list of values per metric under pdx's name
(:data:`pdx.measure.serving.backend.ServerBackend.metric_series` says which Prometheus name each is; a metric
the server does not export is absent). :func:`series_summary` is what `pdx show` says of it.
"""

from __future__ import annotations

import threading
import time
from typing import Mapping

from pdx.domain.serving import prometheus

DEFAULT_INTERVAL_MS = 250
MIN_INTERVAL_MS = 10
MAX_POINTS = 1200
# Which series are levels (their peak is the figure) and which are counters (their increase is).
GAUGES = ("running", "waiting", "kv_cache_usage")
COUNTERS = ("requests_done", "preemptions", "prompt_tokens", "generation_tokens", "prefix_cache_hits",
            "prefix_cache_queries", "decode_calls")


class SeriesRecorder:
    """Reads ``url``/metrics every ``interval_ms`` from :meth:`start` to :meth:`stop`."""

    def __init__(self, url: str, headers: Mapping[str, str], metrics: Mapping[str, tuple[str, ...]],
                 interval_ms: float = DEFAULT_INTERVAL_MS, max_points: int = MAX_POINTS) -> None:
        self.url, self.headers, self.metrics = f"{url.rstrip('/')}/metrics", dict(headers), dict(metrics)
        self.interval_ms, self.max_points = interval_ms, max_points
        self.every_ms = interval_ms
        self.readings: list[tuple[int, dict[str, float]]] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pdx-server-series", daemon=True)

    def start(self) -> "SeriesRecorder":
        self._thread.start()
        return self

    def _run(self) -> None:
        next_ns = time.perf_counter_ns()
        while not self._stop.is_set():
            self.read_once()
            next_ns += int(self.every_ms * 1e6)
            self._stop.wait(max(0.0, (next_ns - time.perf_counter_ns()) / 1e9))

    def read_once(self) -> None:
        import requests  # here: `pdx show` reads this module's summaries without the HTTP stack

        sent = time.perf_counter_ns()
        try:
            response = requests.get(self.url, headers=self.headers, timeout=max(1.0, self.every_ms / 1e3))
            series = prometheus.parse(response.text) if response.status_code == 200 else None
        except requests.RequestException:
            series = None
        if series is None:
            self.failed += 1
            return
        stamp = (sent + time.perf_counter_ns()) // 2
        values = {}
        for name, candidates in self.metrics.items():
            found = next((series[(c, None)] for c in candidates if (c, None) in series), None)
            if found is not None:
                values[name] = found
        self.keep(stamp, values)

    def keep(self, stamp: int, values: dict[str, float]) -> None:
        """Add one reading, halving the kept ones (and doubling their spacing) past the bound."""
        self.readings.append((stamp, values))
        if len(self.readings) > self.max_points:  # keep the first, then every other: the spacing doubles
            self.readings = self.readings[::2]
            self.every_ms *= 2

    def stop(self, origin_ns: int | None) -> dict | None:
        """The series from ``origin_ns`` (the load run's start, perf_counter_ns); None: no reading."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.read_once()  # the state at the end
        if not self.readings:
            return None
        origin = self.readings[0][0] if origin_ns is None else origin_ns
        names = [n for n in self.metrics if any(n in v for _, v in self.readings)]
        return {"version": 1, "interval_ms": self.interval_ms, "every_ms": self.every_ms, "failed": self.failed,
                "t_ns": [t - origin for t, _ in self.readings],
                "metrics": {n: [v.get(n) for _, v in self.readings] for n in names}}


def _summary(series: dict) -> dict:
    """Peaks of the levels, increases of the counters, and how it was read: over the load run, from the
    last reading at or before its start (warm-up requests went before it) to the last reading."""
    metrics, times = series.get("metrics") or {}, series.get("t_ns") or []
    start = max((i for i, t in enumerate(times) if t <= 0), default=0)
    out: dict = {"points": len(times) - start, "every_ms": series.get("every_ms"), "failed": series.get("failed", 0)}
    for name in GAUGES:
        values = [v for v in (metrics.get(name) or ())[start:] if v is not None]
        if values:
            out[f"peak_{name}"] = max(values)
    for name in COUNTERS:
        values = [v for v in (metrics.get(name) or ())[start:] if v is not None]
        if values:
            out[name] = values[-1] - values[0]
    return out


def series_summary(samples: list[dict]) -> dict:
    """What a test's series say (its samples' series together): the highest peaks, the counters' increases added up."""
    parts = [_summary(s) for s in samples]
    out: dict = {"samples": len(parts), "points": sum(p["points"] for p in parts),
                 "every_ms": max((p["every_ms"] for p in parts if p.get("every_ms")), default=None),
                 "failed": sum(p.get("failed") or 0 for p in parts)}
    for name in GAUGES:
        peaks = [p[f"peak_{name}"] for p in parts if f"peak_{name}" in p]
        if peaks:
            out[f"peak_{name}"] = max(peaks)
    for name in COUNTERS:
        found = [p[name] for p in parts if name in p]
        if found:
            out[name] = sum(found)
    hits, queries = out.get("prefix_cache_hits"), out.get("prefix_cache_queries")
    if hits is not None and queries:
        out["prefix_cache_hit_rate"] = hits / queries
    return out
