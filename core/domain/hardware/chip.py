"""A chip's figures as pdx judges by them: what the hardware catalog and the GPU
database both give (:mod:`pdx.domain.hardware.catalog`, :mod:`pdx.domain.hardware.gpu_db`)."""

from __future__ import annotations

from dataclasses import dataclass, field

# A data type an engine computes in -> the figures that serve it, best first.
FALLBACK = {
    "fp32": ("fp32",),
    "tf32": ("tf32", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "fp8": ("fp8", "fp16", "bf16"),
    "int8": ("int8", "fp8", "fp16", "bf16"),
    "fp4": ("fp4", "fp8", "int8", "fp16"),
}


@dataclass(frozen=True)
class Figure:
    value: float  # in the catalog's unit (GB of memory = 2**30 bytes, GB/s = 1e9 bytes/s, TFLOP/s = 1e12)
    source: str  # key into the catalog's sources, or (the GPU database) the page itself
    sparse: bool = False  # a 2:4 sparsity peak: twice the dense rate
    note: str | None = None
    # A figure computed rather than printed (Apple's GPUs): its factors, each naming its source key.
    derivation: dict | None = field(default=None, hash=False)
    url: str | None = None  # the source's address, set by whoever loads the figure

    def record(self) -> dict:
        """The figure as stored with a run, with its source's address (no empty derivation)."""
        return {k: v for k, v in self.__dict__.items() if k != "derivation" or v is not None}


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
    origin: str = "pdx catalog (vendor pages)"  # where its figures come from, said beside every ceiling

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
        for candidate in FALLBACK.get(dtype, (dtype,)):
            value = self.dense_flops(candidate)
            if value:
                return candidate, value
        return None

    def figures(self) -> dict:
        """Every number with its source, as stored with a run."""
        data = {"id": self.id, "name": self.name, "origin": self.origin}
        for key in ("memory_gb", "bandwidth_gbs"):
            figure = getattr(self, key)
            if figure:
                data[key] = figure.record()
        data["tflops"] = {k: f.record() for k, f in self.tflops.items()}
        return data
