"""Vega-Lite specs to inline SVG, at build time, each distinct spec once.

vl-convert costs about a second for its first chart in a process and from
tens to hundreds of milliseconds per chart after that (text layout is most
of it), so a site renders charts per group page, never per run; requests
them all first and renders them together across a pool of processes; and
renders a spec it has seen before only once. Stored text reaches the SVG
only as data; vl-convert escapes it, and each SVG is checked for markup it
must never carry before it is inlined.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from xml.etree import ElementTree

from markupsafe import Markup, escape

from pdx.contract.errors import PdxError
from pdx.reports.charts.specs import chart_text

# Elements that run code or embed another document, and attributes that hold a URL.
_FORBIDDEN_ELEMENTS = {"script", "foreignobject", "iframe", "object", "embed", "handler", "listener", "animate",
                       "set", "animatemotion", "animatetransform"}
_URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "style", "values", "from", "to", "by"}
_SCHEME = re.compile(r"(?i)(javascript|vbscript|data)\s*:")
# Below this many charts a pool costs more (starting processes) than it saves.
POOL_MIN = 8


def unsafe_markup(svg: str) -> str | None:
    """What makes ``svg`` unsafe to inline (None: nothing): read as XML, not searched as text, so a
    name such as ``vllm one=2`` or ``javascript:`` shown as text is text."""
    try:
        root = ElementTree.fromstring(svg)
    except ElementTree.ParseError as exc:
        return f"not well-formed SVG ({exc})"
    if _local(root.tag) != "svg":
        return f"a <{_local(root.tag)}> element where an <svg> belongs"
    for element in root.iter():
        tag = _local(element.tag).lower()
        if tag in _FORBIDDEN_ELEMENTS:
            return f"a <{tag}> element"
        for name, value in element.attrib.items():
            name = _local(name).lower()
            if name.startswith("on"):
                return f"an event handler attribute ({name})"
            if name in _URL_ATTRIBUTES and _SCHEME.search(re.sub(r"[\s\x00-\x1f]+", "", value)):
                return f"a script or data URL in {name}"
    return None


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1] if isinstance(name, str) else ""


def spec_hash(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# vl-convert resolves a relative link (a chart's point linking a run page) against its own data
# folder; a page's link must stay relative to the page, so the prefix is taken off again.
_VL_BASE_HREF = 'href="https://vega.github.io/vega-datasets/'


def _to_svg(spec: dict) -> str:
    try:
        import vl_convert
    except ImportError:
        raise PdxError("charts need the vl-convert-python package", "pip install vl-convert-python") from None
    return vl_convert.vegalite_to_svg(spec).replace(_VL_BASE_HREF, 'href="')


def _worker(specs: list[dict]) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "pdx.reports.charts.worker"], input=json.dumps(specs),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        if "No module named 'vl_convert'" in last:
            raise PdxError("charts need the vl-convert-python package", "pip install vl-convert-python")
        raise RuntimeError(f"chart worker failed: {last}")
    return json.loads(proc.stdout)


def _render_in_workers(specs: list[dict], workers: int) -> list[str]:
    """Specs spread over ``workers`` processes, largest first so the shares come out even."""
    order = sorted(range(len(specs)), key=lambda i: -len(json.dumps(specs[i])))
    shares = [order[w::workers] for w in range(workers)]
    with ThreadPoolExecutor(workers) as threads:
        results = list(threads.map(lambda share: _worker([specs[i] for i in share]), shares))
    raws: list[str] = [""] * len(specs)
    for share, svgs in zip(shares, results):
        for i, svg in zip(share, svgs):
            raws[i] = svg
    return raws


def _workers() -> int:
    wanted = os.environ.get("PDX_CHART_WORKERS")
    if wanted and wanted.isdigit():
        return max(1, int(wanted))
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


class ChartRenderer:
    """``request`` a spec, ``flush`` to render every pending one, ``svg`` to get one (rendering it if needed)."""

    def __init__(self) -> None:
        self._svg: dict[str, Markup] = {}
        self._pending: dict[str, tuple[dict, str]] = {}
        self.requested = 0
        self.rendered_now = 0
        self.seconds = 0.0
        self.workers_used = 1
        self._background: Future | None = None
        self._thread: ThreadPoolExecutor | None = None

    def request(self, spec: dict, label: str) -> str:
        key = spec_hash(spec)
        self.requested += 1
        if key not in self._svg:
            self._pending.setdefault(key, (spec, label))
        return key

    def svg(self, key: str) -> Markup:
        self.wait()
        if key not in self._svg:
            self.flush(pool=False)
        return self._svg[key]

    @property
    def pending(self) -> list[str]:
        return list(self._pending)

    def all_svgs(self) -> dict[str, Markup]:
        return dict(self._svg)

    def preload(self, key: str, svg: str) -> None:
        """An SVG rendered by an earlier build (a site keeps them), checked like a new one."""
        if key in self._pending and svg.startswith("<svg") and unsafe_markup(svg) is None:
            self._svg[key] = Markup(svg)
            del self._pending[key]

    def start(self) -> None:
        """Render what is pending in the background (worker processes) while the caller goes on."""
        if self._pending and self._background is None:
            self._thread = ThreadPoolExecutor(1)
            self._background = self._thread.submit(self.flush)

    def wait(self) -> None:
        if self._background is not None and self._thread is not None:  # the thread runs the background flush
            background, self._background = self._background, None
            try:
                background.result()
            finally:
                self._thread.shutdown()

    def flush(self, pool: bool = True) -> None:
        if not self._pending:
            return
        started = time.perf_counter()
        keys = list(self._pending)
        specs = [self._pending[k][0] for k in keys]
        workers = min(_workers(), len(keys)) if pool and len(keys) >= POOL_MIN else 1
        if workers > 1:
            raws = _render_in_workers(specs, workers)
            self.workers_used = max(self.workers_used, workers)
        else:
            raws = [_to_svg(spec) for spec in specs]
        self.rendered_now += len(keys)
        for key, raw in zip(keys, raws):
            self._svg[key] = self._inline(raw, self._pending.pop(key)[1])
        # Only what was rendered leaves: a page may request a chart while a background flush runs.
        self.seconds += time.perf_counter() - started

    @staticmethod
    def _inline(raw: str, label: str) -> Markup:
        problem = unsafe_markup(raw)  # vl-convert escapes text; this guards against that ever changing
        if problem:
            raise RuntimeError(f"chart {label!r} rendered markup that cannot be inlined safely: {problem}")
        svg = re.sub(r'<svg\b([^>]*?) class="marks"', r"<svg\1", raw, count=1)
        return Markup(svg.replace("<svg ", f'<svg class="chart" role="img" '
                                  f'aria-label="{escape(chart_text(label))}" ', 1))

    @property
    def stats(self) -> dict:
        return {"requested": self.requested, "rendered": self.rendered_now,
                "reused": len(self._svg) - self.rendered_now, "workers": self.workers_used,
                "seconds": round(self.seconds, 3)}
