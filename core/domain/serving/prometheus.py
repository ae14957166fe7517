"""Prometheus text from a server's ``/metrics``: read it, take the difference of
two scrapes, and summarise a test's share of the server's own histograms and
counters. Series that differ only in labels other than ``le`` (model name,
engine index) are added up: one server, one figure."""

from __future__ import annotations

import math
import re

_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")
_LE = re.compile(r'(?:^|,)\s*le="(?P<le>[^"]*)"')

Series = dict[tuple[str, str | None], float]  # (name, le) -> value


def parse(text: str) -> Series:
    series: Series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            continue
        try:
            value = float(match["value"])
        except ValueError:
            continue
        if math.isnan(value):
            continue
        le = _LE.search(match["labels"] or "")
        key = (match["name"], le["le"] if le else None)
        series[key] = series.get(key, 0.0) + value
    return series


def difference(before: Series, after: Series) -> Series:
    return {key: value - before.get(key, 0.0) for key, value in after.items()}


def histogram(delta: Series, name: str) -> dict | None:
    """count, sum (s), mean (ms) and cumulative bucket counts of one histogram's change."""
    count = delta.get((f"{name}_count", None))
    if count is None:
        return None
    total = delta.get((f"{name}_sum", None), 0.0)
    buckets = {le: v for (n, le), v in delta.items() if n == f"{name}_bucket" and le is not None}
    return {"count": count, "sum_s": total, "mean_ms": total / count * 1e3 if count else None,
            "buckets": dict(sorted(buckets.items(), key=lambda kv: float(kv[0])))}


def summarize(delta: Series, histograms: dict[str, str], counters: dict[str, str]) -> dict:
    """The named histograms and counters of a change, under pdx's names for them."""
    out: dict = {}
    for label, name in histograms.items():
        found = histogram(delta, name)
        if found is not None:
            out[label] = found
    for label, name in counters.items():
        value = delta.get((name, None))
        if value is not None:
            out[label] = value
    return out
