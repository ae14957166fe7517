"""The hardware catalog: vendor peak figures per chip, read from catalog.json.

Every number carries the vendor page it came from; a figure a vendor does
not publish is absent (the probes, or ``--bandwidth``/``--flops``, fill the
gap). Names resolve loosely: "m2 max", "Apple M2 Max" and "H100 SXM5" all
find their chip.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from pdx.errors import PdxError

CATALOG_PATH = Path(__file__).with_name("catalog.json")
# Words a user may add or leave out: "NVIDIA GeForce RTX 4090" is "rtx 4090".
_VENDOR_WORDS = re.compile(r"\b(nvidia|geforce|apple|amd|instinct|the)\b")
# A data type an engine computes in -> the figures that serve it, best first.
_FALLBACK = {
    "fp32": ("fp32",),
    "tf32": ("tf32", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "fp8": ("fp8", "fp16", "bf16"),
    "int8": ("int8", "fp8", "fp16", "bf16"),
    "fp4": ("fp4", "fp8", "int8", "fp16"),
}


def normalize(name: str) -> str:
    """The lookup key of a name: lowercase letters and digits, vendor words dropped."""
    return re.sub(r"[^a-z0-9+]", "", _VENDOR_WORDS.sub(" ", name.lower()))


@dataclass(frozen=True)
class Figure:
    value: float  # in the catalog's unit (GB of memory = 2**30 bytes, GB/s = 1e9 bytes/s, TFLOP/s = 1e12)
    source: str  # key into the catalog's sources
    sparse: bool = False  # a 2:4 sparsity peak: twice the dense rate
    note: str | None = None


@dataclass(frozen=True)
class Chip:
    id: str
    name: str
    vendor: str
    kind: str
    aliases: tuple[str, ...]
    match: dict
    memory_gb: Figure | None
    bandwidth_gbs: Figure | None
    tflops: dict[str, Figure] = field(default_factory=dict)
    note: str | None = None

    @property
    def bandwidth(self) -> float | None:
        """Peak memory bandwidth, bytes/s."""
        return self.bandwidth_gbs.value * 1e9 if self.bandwidth_gbs else None

    @property
    def memory_bytes(self) -> float | None:
        """Capacity in bytes: a memory "GB" on a spec sheet is 2**30 bytes."""
        return self.memory_gb.value * 2**30 if self.memory_gb else None

    def dense_flops(self, dtype: str) -> float | None:
        """Dense peak FLOP/s of exactly ``dtype`` (a sparse-only figure is halved)."""
        figure = self.tflops.get(dtype)
        if figure is None:
            return None
        return figure.value * 1e12 / (2 if figure.sparse else 1)

    def flops_for(self, dtype: str) -> tuple[str, float] | None:
        """The figure that serves computing in ``dtype``: (data type used, dense FLOP/s)."""
        for candidate in _FALLBACK.get(dtype, (dtype,)):
            value = self.dense_flops(candidate)
            if value:
                return candidate, value
        return None

    def figures(self) -> dict:
        """Every number with its source, as stored with a run."""
        data = {"id": self.id, "name": self.name}
        for key in ("memory_gb", "bandwidth_gbs"):
            figure = getattr(self, key)
            if figure:
                data[key] = figure.__dict__ | {"url": source_url(figure.source)}
        data["tflops"] = {k: f.__dict__ | {"url": source_url(f.source)} for k, f in self.tflops.items()}
        return data


def _figure(data: dict | None) -> Figure | None:
    return Figure(**data) if data else None


@functools.lru_cache(maxsize=1)
def _load() -> tuple[dict, tuple[Chip, ...]]:
    raw = json.loads(CATALOG_PATH.read_text())
    chips = tuple(
        Chip(
            id=c["id"], name=c["name"], vendor=c["vendor"], kind=c["kind"], aliases=tuple(c.get("aliases", ())),
            match=c.get("match", {}), memory_gb=_figure(c.get("memory_gb")),
            bandwidth_gbs=_figure(c.get("bandwidth_gbs")),
            tflops={k: Figure(**v) for k, v in c.get("tflops", {}).items()}, note=c.get("note"),
        )
        for c in raw["chips"]
    )
    return raw["sources"], chips


def chips() -> tuple[Chip, ...]:
    return _load()[1]


def sources() -> dict:
    return _load()[0]


def source_url(key: str) -> str | None:
    return sources().get(key, {}).get("url")


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, Chip]:
    index: dict[str, Chip] = {}
    for chip in chips():
        for name in (chip.id, chip.name, *chip.aliases, *chip.match.get("nvidia_smi", ())):
            index.setdefault(normalize(name), chip)
    return index


def get(chip_id: str) -> Chip | None:
    return next((c for c in chips() if c.id == chip_id), None)


def find(name: str) -> Chip | None:
    return _index().get(normalize(name))


def lookup(name: str) -> Chip:
    """The chip a user named, or a one-line error with the closest names."""
    chip = find(name)
    if chip is not None:
        return chip
    names = {normalize(c.name): c.name for c in chips()} | {normalize(a): a for c in chips() for a in c.aliases}
    close = difflib.get_close_matches(normalize(name), list(names), n=3, cutoff=0.5)
    hint = f"closest: {', '.join(names[c] for c in close)}; " if close else ""
    raise PdxError(f"unknown hardware {name!r}", f"{hint}see `pdx hw list`, or give --bandwidth and --flops")


def match_nvidia(name: str) -> Chip | None:
    """The chip behind an ``nvidia-smi`` name such as "NVIDIA H100 80GB HBM3"."""
    wanted = name.strip().lower()
    for chip in chips():
        if any(wanted == n.lower() for n in chip.match.get("nvidia_smi", ())):
            return chip
    return None


def match_cpu(model: str) -> Chip | None:
    """A catalogued SoC whose CPU reports this model name (e.g. Ryzen AI Max+ 395)."""
    upper = model.upper()
    for chip in chips():
        if any(pattern.upper() in upper for pattern in chip.match.get("cpu_model", ())):
            return chip
    return None
