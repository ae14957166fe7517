"""Quantities as users type them: ``3.83GB``, ``400GB/s``, ``3.35TB/s``,
``27TFLOPS``, ``7B``.

Decimal prefixes (k, M, G, T, P) are powers of 1000 and binary ones (KiB,
MiB, GiB, TiB) powers of 1024, as vendors print them: "80 GB" of HBM and
"3.35 TB/s" are decimal. Every mistake is one line naming the flag.
"""

from __future__ import annotations

import re

from pdx.contract.errors import PdxError
from pdx.contract.numbers import MAX_FLOAT, parse_float

_NUMBER = re.compile(r"^\s*(?P<num>[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(?P<unit>[A-Za-z/]*)\s*$", re.ASCII)
_DECIMAL = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}
_BINARY = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40, "pi": 2**50}

BYTE_EXAMPLE = "e.g. 3.83GB or 24GiB"
BANDWIDTH_EXAMPLE = "e.g. 400GB/s, 3.35TB/s, or a memory: DDR5-4800x8 (8 channels), LPDDR5X-8000x256bit"
FLOPS_EXAMPLE = "e.g. 27TFLOPS or 989TFLOP/s"
COUNT_EXAMPLE = "e.g. 7B, 405M or 7000000000"


def _split(text: str, flag: str, example: str) -> tuple[float, str]:
    raw = str(text).strip()
    if raw.startswith("-"):
        raise PdxError(f"{flag}: {raw!r} is negative; it must be above zero ({example})")
    match = _NUMBER.match(raw)
    if not match:
        raise PdxError(f"{flag}: cannot read {raw!r} ({example})")
    value = parse_float(match["num"], flag, minimum=0.0)
    if value <= 0:
        raise PdxError(f"{flag}: {raw!r} is zero; it must be above zero ({example})")
    return value, match["unit"]


def _finite(value: float, flag: str, raw: str, example: str) -> float:
    """A value times its unit prefix, still within what any figure can be (1e400GB/s is not)."""
    if not value <= MAX_FLOAT:
        raise PdxError(f"{flag}: {raw!r} is too large to be a real figure ({example})")
    return value


def _prefix(prefix: str, flag: str, raw: str, example: str) -> float:
    low = prefix.lower()
    if low in _BINARY:
        return _BINARY[low]
    if low in _DECIMAL:
        return _DECIMAL[low]
    raise PdxError(f"{flag}: unknown unit prefix {prefix!r} in {raw!r} ({example})")


def _scaled(text: str, flag: str, example: str, suffixes: tuple[str, ...], bare_ok: bool) -> float:
    """A number with a unit: a prefix (k, M, G, Gi...) followed by one of ``suffixes``."""
    value, unit = _split(text, flag, example)
    raw = str(text).strip()
    if not unit:
        if bare_ok:
            return _finite(value, flag, raw, example)
        raise PdxError(f"{flag}: {raw!r} has no unit ({example})")
    low = unit.lower()
    for suffix in suffixes:
        if low.endswith(suffix):
            return _finite(value * _prefix(unit[: len(unit) - len(suffix)], flag, raw, example), flag, raw, example)
    raise PdxError(f"{flag}: unknown unit {unit!r} in {raw!r} ({example})")


def parse_bytes(text: str, flag: str = "size") -> float:
    """``3.83GB`` -> 3.83e9, ``24GiB`` or ``24Gi`` -> 24 * 2**30; a bare number is bytes."""
    return _scaled(text, flag, BYTE_EXAMPLE, ("b", ""), bare_ok=True)


# A memory's name: its type, transfers per second and channels of 64 bits (DDR5-4800x8, a Xeon's eight
# channels), or its bus width (LPDDR5X-8000x256bit, a SoC's); peak bytes/s = MT/s x bus bytes.
_MEMORY = re.compile(r"^(?:lp)?ddr\d[a-z]?-(\d{3,5})x(\d{1,4})(bit)?$", re.I)


def parse_bandwidth(text: str, flag: str = "--bandwidth") -> float:
    """``400GB/s`` -> 4e11 bytes/s (``GBps`` works too), or a memory by its type and channels:
    ``DDR5-4800x8`` -> 4800e6 x 8 bytes x 8 channels = 307.2e9; a unit is required."""
    cleaned = str(text).strip()
    memory = _MEMORY.match(cleaned.replace(" ", ""))
    if memory:
        transfers, count = float(memory[1]) * 1e6, int(memory[2])
        if count < 1:
            raise PdxError(f"{flag}: {text!r} has no channels ({BANDWIDTH_EXAMPLE})")
        return transfers * (count / 8 if memory[3] else 8 * count)
    if cleaned.lower().endswith("bps"):
        cleaned = cleaned[:-2] + "/s"
    return _scaled(cleaned, flag, BANDWIDTH_EXAMPLE, ("b/s",), bare_ok=False)


def parse_flops(text: str, flag: str = "--flops") -> float:
    """``27TFLOPS``, ``989 TFLOP/s``, ``1.2PFLOPS``, ``500TOPS`` -> operations per second."""
    return _scaled(text, flag, FLOPS_EXAMPLE, ("flop/s", "flops", "op/s", "ops"), bare_ok=False)


def parse_count(text: str, flag: str = "--params") -> float:
    """``7B`` -> 7e9 (B is billions here, as model names use it), ``405M``, ``1.5T``."""
    value, unit = _split(text, flag, COUNT_EXAMPLE)
    scale = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}.get(unit.lower())
    if scale is None:
        raise PdxError(f"{flag}: unknown unit {unit!r} in {str(text).strip()!r} ({COUNT_EXAMPLE})")
    return _finite(value * scale, flag, str(text).strip(), COUNT_EXAMPLE)


def si_parts(value: float, unit: str, digits: int = 3) -> tuple[str, str]:
    """The number and its unit, the prefix chosen by magnitude: 1.92e10, "FLOP/s" -> ("19.2", "GFLOP/s"),
    not 0.02 TFLOP/s (decimal prefixes, ``digits`` significant figures)."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g}", f"{prefix}{unit}"
    return f"{value:.{digits}g}", unit


def fmt_si(value: float | None, unit: str, digits: int = 3) -> str:
    """4e11, "B/s" -> "400 GB/s" (:func:`si_parts` in one string)."""
    return "?" if value is None else " ".join(si_parts(value, unit, digits))


def human_bytes(n: float | None) -> str:
    """A size in binary units, as operating systems and llama-bench print it: 3.56 GiB, 512 B."""
    if n is None:
        return "?"
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def human_count(n: float | None) -> str:
    """A count (parameters) as llama-bench prints it: 6.74 B, 13.90 M."""
    if n is None:
        return "?"
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return str(n)
