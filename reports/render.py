"""Vega-Lite specs to inline SVG, at build time, cached by the spec's hash.

vl-convert costs about a second for its first chart in a process and tens
of milliseconds per chart after that, so a site renders charts per group
(hardware, model, configuration), never one per run, and renders a spec it
has seen before only once. Stored text reaches the SVG only as data; the
renderer escapes it and the result is checked for markup it must never
carry before it is inlined.
"""

from __future__ import annotations

import hashlib
import json
import re
import time

from markupsafe import Markup, escape

from pdx.errors import PdxError

_FORBIDDEN = re.compile(r"<\s*(script|foreignObject|iframe)|\son[a-z]+\s*=|javascript:", re.IGNORECASE)


def spec_hash(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class ChartRenderer:
    """Renders specs to SVG once each; ``stats`` says how many were rendered and how long it took."""

    def __init__(self) -> None:
        self._cache: dict[str, Markup] = {}
        self.rendered = 0
        self.reused = 0
        self.seconds = 0.0

    def svg(self, spec: dict, label: str) -> Markup:
        key = spec_hash(spec)
        cached = self._cache.get(key)
        if cached is not None:
            self.reused += 1
            return cached
        try:
            import vl_convert
        except ImportError:
            raise PdxError("charts need the vl-convert-python package", "pip install vl-convert-python") from None
        started = time.perf_counter()
        raw = vl_convert.vegalite_to_svg(spec)
        self.seconds += time.perf_counter() - started
        self.rendered += 1
        if _FORBIDDEN.search(raw):  # vl-convert escapes text; this guards against that ever changing
            raise RuntimeError(f"chart {label!r} rendered markup that cannot be inlined safely")
        svg = re.sub(r'<svg\b([^>]*?) class="marks"', r'<svg\1', raw, count=1)
        svg = svg.replace("<svg ", f'<svg class="chart" role="img" aria-label="{escape(label)}" ', 1)
        self._cache[key] = Markup(svg)
        return self._cache[key]

    @property
    def stats(self) -> dict:
        return {"rendered": self.rendered, "reused": self.reused, "seconds": round(self.seconds, 3)}
