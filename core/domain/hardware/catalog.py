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
from pathlib import Path

from pdx.contract.errors import PdxError
from pdx.domain.hardware import gpu_db
from pdx.domain.hardware.chip import Chip, Figure

__all__ = ["Chip", "Figure", "chips", "find", "get", "lookup", "match_cpu", "match_nvidia", "normalize", "sources"]

CATALOG_PATH = Path(__file__).with_name("catalog.json")
# Words a user may add or leave out: "NVIDIA GeForce RTX 4090" is "rtx 4090".
_VENDOR_WORDS = re.compile(r"\b(nvidia|geforce|apple|amd|instinct|the)\b")
def normalize(name: str) -> str:
    """The lookup key of a name: lowercase letters and digits, vendor words dropped."""
    return re.sub(r"[^a-z0-9+]", "", _VENDOR_WORDS.sub(" ", name.lower()))


def _figure(data: dict | None, sources: dict) -> Figure | None:
    return Figure(**data, url=sources.get(data["source"], {}).get("url")) if data else None


@functools.lru_cache(maxsize=1)
def _raw() -> dict:
    return json.loads(CATALOG_PATH.read_text())


@functools.lru_cache(maxsize=1)
def _load() -> tuple[dict, tuple[Chip, ...]]:
    raw = _raw()
    chips = tuple(
        Chip(
            id=c["id"], name=c["name"], vendor=c["vendor"], kind=c["kind"], aliases=tuple(c.get("aliases", ())),
            match=c.get("match", {}), memory_gb=_figure(c.get("memory_gb"), raw["sources"]),
            bandwidth_gbs=_figure(c.get("bandwidth_gbs"), raw["sources"]),
            tflops=_with_gpu_db({k: _figure(v, raw["sources"]) for k, v in c.get("tflops", {}).items()},
                                c.get("gpu_db")),
            note=c.get("note"),
        )
        for c in raw["chips"]
    )
    return raw["sources"], chips


def _with_gpu_db(tflops: dict[str, Figure], key: str | None) -> dict[str, Figure]:
    """An entry's own figures, and for each data type its vendor does not publish, the GPU database's
    figure for the GPU it names (``gpu_db``: a SoC's integrated GPU, such as Strix Halo's Radeon 8060S)."""
    if not key:
        return tflops

    if key not in gpu_db.database():
        return tflops
    return gpu_db.chip(key).tflops | tflops


def chips() -> tuple[Chip, ...]:
    return _load()[1]


def sources() -> dict:
    return _load()[0]


def source_url(key: str) -> str | None:
    """A figure's source: a key of the catalog's sources, or (figures from elsewhere) the URL itself."""
    if key.startswith(("https://", "http://")):
        return key
    return sources().get(key, {}).get("url")


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, Chip]:
    index: dict[str, Chip] = {}
    for chip in chips():
        for name in (chip.id, chip.name, *chip.aliases, *chip.match.get("nvidia_smi", ())):
            index.setdefault(normalize(name), chip)
    return index


def get(chip_id: str) -> Chip | None:
    return next((c for c in chips() if c.id == chip_id), None) or gpu_db.get(chip_id)


def find(name: str) -> Chip | None:
    """The catalog's own entry for a name, else the GPU database's (:mod:`pdx.domain.hardware.gpu_db`)."""
    return _index().get(normalize(name)) or gpu_db.find(name)


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
    # Matched on the catalog's own entries: the chips, with the GPU database's figures, are built only
    # for a match (the database takes longer to load than the rest of a run's set-up).
    for entry in _raw()["chips"]:
        if any(wanted == n.lower() for n in entry.get("match", {}).get("nvidia_smi", ())):
            return get(entry["id"])
    return None


def match_cpu(model: str) -> Chip | None:
    """A catalogued SoC whose CPU reports this model name (e.g. Ryzen AI Max+ 395)."""
    upper = model.upper()
    for entry in _raw()["chips"]:  # as match_nvidia
        if any(pattern.upper() in upper for pattern in entry.get("match", {}).get("cpu_model", ())):
            return get(entry["id"])
    return None
