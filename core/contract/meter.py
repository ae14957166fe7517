"""What an energy meter is (the contract a ``pdx_register_meters`` plugin meets).

A :class:`MeterSource` is a kind of counter pdx can look for (NVIDIA GPUs
through NVML, a CPU's RAPL packages, an Apple SoC); ``find()`` returns the
:class:`Meter` objects present on this machine, or raises
:class:`MeterUnavailable` saying why there are none (``pdx hw`` prints it).
A :class:`Meter` is one cumulative energy counter: ``read()`` returns joules
since an origin of the meter's choosing and never decreases (a counter that
wraps is the source's to unwrap). What it ``covers`` says which part of the
machine the joules are from; two meters of one machine must not cover the
same joules, as pdx adds them up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from pdx.contract.errors import PdxError

# What a meter may cover; a page names each, and the sum of a machine's meters is only
# meaningful when they do not overlap.
COVERS = ("gpu board", "cpu package", "dram", "soc cpu", "soc gpu", "soc ane", "soc dram", "machine")


class MeterUnavailable(Exception):
    """A source found no counter here; the message says why, in a few words (``no NVML``)."""


@dataclass
class Meter:
    """One cumulative energy counter."""

    name: str  # unique among a machine's meters: "nvml:0", "rapl:0:dram"
    covers: str  # one of COVERS
    device: str  # what it is on, in words: "NVIDIA H200", "CPU package 0"
    read: Callable[[], float]  # joules since the meter's origin, never decreasing
    source: str = ""  # how pdx reads it: "zeus 0.16.0 over NVML"

    def describe(self) -> dict:
        return {"name": self.name, "covers": self.covers, "device": self.device, "source": self.source}


@dataclass
class MeterSource:
    """A kind of counter: ``find()`` returns this machine's meters of the kind, or raises MeterUnavailable."""

    name: str
    find: Callable[[], list[Meter]]
    install: str = ""  # what to install when its library is missing
    plugin: str = field(default="", compare=False)  # set by the plugin manager


def check_source(source: object) -> MeterSource:
    if not isinstance(source, MeterSource):
        raise PdxError(f"it registered {source!r}, which is not a pdx.contract.meter.MeterSource")
    if not source.name or not callable(source.find):
        raise PdxError(f"meter source {source!r} has no name or no find()")
    return source


def check_meter(meter: object, source: str) -> Meter:
    if not isinstance(meter, Meter):
        raise PdxError(f"meter source {source} found {meter!r}, which is not a pdx.contract.meter.Meter")
    if meter.covers not in COVERS:
        raise PdxError(f"meter {meter.name} of {source} covers {meter.covers!r}; say one of: {', '.join(COVERS)}")
    if not meter.name or not callable(meter.read):
        raise PdxError(f"a meter of {source} has no name or no read()")
    return meter
