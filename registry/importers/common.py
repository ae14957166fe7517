"""What every importer of another tool's output shares: the run record
around the tests it parsed, identities for models and machines that the
tool only described, and the converters every field of a file goes through.

Records made here have the shapes pdx's own runs have (the hardware block of
:func:`pdx.measure.hardware.detect`, the manifest of :func:`pdx.measure.environment.collect`),
with what the tool did not record as ``None``, never as another type, so a
page that reads a pdx run reads an imported one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import pdx
from pdx.contract import build, record
from pdx.domain.hardware import catalog, named
from pdx.domain.hardware.catalog import Chip
from pdx.contract.errors import ImportFileError
from pdx.registry.bundle import content_id, fail

# The hardware id of an imported run whose tool named no machine: no hardware page is made of it.
UNRECORDED_HARDWARE = "unrecorded"

# Larger than any figure a benchmark file can honestly hold (ns in a year: 3e16).
_LIMIT = 1e18
COUNT_MAX = 2**31 - 1  # token counts, threads, lengths: the registry's INTEGER columns
BIG_MAX = 2**62  # nanoseconds, bytes, parameters: its BIGINT columns hold up to 2**63 - 1


def _hash(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


# -- converters: every number, text and time read from a file goes through one of these ------------------------


def number(value: object, what: str, source: str | Path, minimum: float = 0.0, positive: bool = False) -> float:
    """A finite number at least ``minimum`` (above 0 if ``positive``); else a one-line ImportFileError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(source, f"{what} is {_show(value)}, not a number")
    if isinstance(value, int) and abs(value) > _LIMIT:  # math.isfinite of an int past a float's range overflows
        raise fail(source, f"{what} is a {len(str(abs(value)))}-digit number, not a finite number of sensible size")
    if not math.isfinite(value) or abs(value) > _LIMIT:
        raise fail(source, f"{what} is {_show(value)}, not a finite number of sensible size")
    if value < minimum or (positive and value <= 0):
        raise fail(source, f"{what} is {_show(value)}; it must be {'above' if positive else 'at least'} {minimum:g}")
    return float(value)


def integer(value: object, what: str, source: str | Path, minimum: int = 0, maximum: int = COUNT_MAX) -> int:
    """A whole number from ``minimum`` to ``maximum`` (an integral float such as 8.0 counts); else a one-line
    error."""
    figure = number(value, what, source, minimum)
    if figure != int(figure):
        raise fail(source, f"{what} is {_show(value)}, not a whole number")
    if figure > maximum:
        raise fail(source, f"{what} is {_show(value)}, over the limit of {maximum}")
    return int(value) if isinstance(value, int) else int(figure)


def optional_integer(value: object, what: str, source: str | Path, minimum: int = 0,
                     maximum: int = COUNT_MAX) -> int | None:
    return None if value is None else integer(value, what, source, minimum, maximum)


def seconds(value: object, what: str, source: str | Path, positive: bool = False) -> float:
    """A duration in seconds whose nanoseconds the registry can hold."""
    figure = number(value, what, source, positive=positive)
    if figure * 1e9 > BIG_MAX:
        raise fail(source, f"{what} is {_show(value)} s, longer than any benchmark")
    return figure


def text(value: object, what: str, source: str | Path, limit: int = 1024, default: str | None = None) -> str | None:
    """A string of at most ``limit`` characters (None, or ``default``, when absent)."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise fail(source, f"{what} is {_show(value)}, not text")
    if len(value) > limit:
        raise fail(source, f"{what} is {len(value)} characters long, over the limit of {limit}")
    return value


def numbers(value: object, what: str, source: str | Path, minimum: float = 0.0, positive: bool = False) -> list[float]:
    if not isinstance(value, list):
        raise fail(source, f"{what} is {_show(value)}, not a list of numbers")
    return [number(v, f"{what}[{i}]", source, minimum, positive) for i, v in enumerate(value)]


def timestamp(value: object, what: str, source: str | Path) -> str:
    """An ISO 8601 time (a trailing Z or no zone read as UTC) as pdx stores times."""
    raw = text(value, what, source, 64)
    try:
        when = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise fail(source, f"{what} is {_show(value)}, not an ISO 8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).isoformat()


def _show(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


# -- identities -----------------------------------------------------------------------------------------------


def described_model(path: str, name: str, fmt: str, architecture: str = "?", dtype: str = "?",
                    n_params: int = 0, file_bytes: int = 0, **facts: Any) -> dict[str, Any]:
    """A model known only by the tool's description: its id hashes that description."""
    description = {"path": path, "architecture": architecture, "dtype": dtype, "n_params": n_params,
                   "file_bytes": file_bytes, **facts}
    sha = _hash(description)
    return {
        "id": sha, "sha256": sha, "name": name[:256], "path": path, "format": fmt, "architecture": architecture[:64],
        "n_params": n_params, "dtype": dtype[:32], "n_layers": 0, "n_heads": 0, "n_kv_heads": 0, "head_dim": 0,
        "n_embd": 0, "n_ff": 0, "n_vocab": 0, "n_ctx_train": 0, "file_bytes": file_bytes, "synthetic": None,
        "extra": {"identity": "described by the importing tool; the file was not hashed", **facts},
    }


def _cpu_block(name: str | None) -> dict[str, Any]:
    """:func:`pdx.domain.hardware.cpu.detect_cpu`'s keys, with what the tool did not say as None."""
    return {"name": name or None, "arch": None, "logical_cores": None, "usable_cpus": None, "physical_cores": None,
            "sockets": None, "flags": [], "memory_bytes": None}


def _gpu_block(name: str) -> dict[str, Any]:
    """:func:`pdx.domain.hardware.nvidia.parse_csv`'s keys for one GPU known only by name."""
    chip = catalog.match_nvidia(name) or catalog.find(name)
    return {"index": None, "name": name, "memory_mib": None, "memory_bytes": None, "driver": None,
            "clock_sm_max_mhz": None, "clock_mem_max_mhz": None, "compute_cap": None,
            "catalog": chip.id if chip else None}


def described_hardware(cpu: str | None = None, gpu: str | None = None, chip: str | None = None) -> dict[str, Any]:
    """The machine as a tool named it (``cpu``; ``gpu``: comma-separated names), in detect()'s shape.

    ``chip``, a catalog name the user gave (``pdx import --hardware``), says which
    device the engine ran on when the tool did not, and makes the catalog match.
    """
    named = catalog.lookup(chip) if chip else None
    apple = catalog.find(cpu or "") or catalog.find(gpu or "")  # llama-bench on Metal names the SoC
    apple = apple if apple and apple.vendor.lower() == "apple" else None
    gpus = [] if apple else [_gpu_block(g.strip()) for g in (gpu or "").split(",") if g.strip()]
    if named and named.kind == "gpu" and not gpus:
        gpus = [_gpu_block(named.name)]
    matched = (named.id if named else None) or next((g["catalog"] for g in gpus if g["catalog"]), None) or \
        (apple.id if apple else None) or getattr(catalog.match_cpu(cpu or ""), "id", None)
    matched_chip = catalog.get(matched) if matched else None
    kind = "gpu" if gpus else matched_chip.kind if matched_chip else "cpu" if cpu else "unknown"
    name = (gpus[0]["name"] if gpus else None) or cpu or (named.name if named else None)
    return {"id": _hash({"cpu": cpu or "", "gpu": gpu or "", "chip": named.id if named else None})[:16]
            if name else UNRECORDED_HARDWARE, "kind": kind, "name": (name or "not recorded by the tool")[:256],
            "cpu": _cpu_block(cpu), "gpus": gpus, "catalog": matched}


def chip_named_in(text_: str, backends: str | None, provenance: dict[str, Any],
                  where: str = "the text around the table") -> tuple[Chip, int] | None:
    """The one chip a post's words name (:mod:`pdx.domain.hardware.named`, narrowed by the backends the
    engine ran: "Metal", "CUDA", "MLX"), with how many of it the words say; several, or a name pdx does not
    know as written, and none: ``provenance`` says which, so the ceiling can (it asks for --hardware)."""
    found = named.read(text_)
    chips = named.narrowed(found.chips, backends)
    if found.unknown:
        provenance["chips_unknown"] = found.unknown[:5]
    if len(chips) > 1:
        provenance["chips_named"] = [c.name for c, _ in chips]
    if len(chips) != 1:
        return None
    chip, count = chips[0]
    provenance["chip"] = f"{f'{count} x ' if count > 1 else ''}{chip.name}, named in {where}"
    return chip, count


def described_environment(origin: str, **facts: Any) -> dict[str, Any]:
    """:func:`pdx.measure.environment.collect`'s keys for a run pdx did not see: None where unknown."""
    return {"pdx_version": None, "python": None, "python_implementation": None, "os": None, "os_release": None,
            "platform": None, "hostname": None, "threads": None, "seed": None, "command": None, "packages": {},
            "variables": {}, "imported_from": origin, **facts}


def make_test(ordinal: int, spec: build.Shape, /, samples: list[record.Sample], engine: dict[str, Any],
              when: str | None, warmup: int = 0, status: str = "ok", error: str | None = None,
              **more: Any) -> record.Test:
    """A test as the file gave it (``more``: its other objects, a serving test's spec and requests: the
    shape it ran, ``spec``, is given by place); what the file did not say is :func:`pdx.contract.build.test`'s
    default."""
    return build.test(spec, samples, ordinal=ordinal, started_at=when, status=status, error=error, warmup=warmup,
                      engine=engine, **more)


def sample(ns: float, n_prompt: int, n_gen: int, prompt_ns: float | None = None, gen_ns: float | None = None,
           engine: dict[str, Any] | None = None) -> record.Sample:
    for value in (ns, prompt_ns, gen_ns):
        if value is not None and not 0 <= value <= BIG_MAX:  # nan fails both comparisons
            raise ImportFileError(f"cannot import: a time of {value:g} ns is out of range (a damaged figure?)")
    return build.sample(max(1, round(ns)), n_prompt, n_gen, None if prompt_ns is None else round(prompt_ns),
                        None if gen_ns is None else round(gen_ns), engine or {})


def file_facts(path: Path, text: str, fmt: str) -> dict[str, Any]:
    # A name the OS could not decode as UTF-8 (its bytes kept as lone surrogates) is shown, not refused.
    return {"file": os.fsencode(path).decode("utf-8", "replace"), "format": fmt,
            "file_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "imported_at": datetime.now(timezone.utc).isoformat()}


def imported_run(origin: str, backend: str, engine: dict[str, Any], model: dict[str, Any], hardware: dict[str, Any],
                 tests: list[record.Test], provenance: dict[str, Any], *, created_at: str | None = None,
                 repetitions: int = 0, warmup: int = 0, environment: dict[str, Any] | None = None,
                 **known: Any) -> dict[str, Any]:
    """A complete run record for something another tool measured; its id is its content's hash.
    ``engine``: :func:`pdx.contract.build.engine`'s fields the file gave; ``known``: what else it said
    of the run (threads, finished_at, status, error...); the rest is :func:`pdx.contract.build.run`'s
    default."""
    run = build.run(
        backend=backend, engine=build.engine(**engine), model=model, hardware=hardware, tests=tests,
        environment=described_environment(origin, **(environment or {})), pdx_version=pdx.__version__,
        origin=origin, provenance=provenance, created_at=created_at,
        workload={"tests": [t["name"] for t in tests], "repetitions": repetitions, "warmup": warmup, "seed": 0},
        **{"status": "complete"} | known | {"finished_at": known.get("finished_at") or created_at})
    as_json = cast(dict[str, Any], run)  # what an importer's reader returns (pdx.contract.importer.Reader)
    as_json["id"] = content_id(as_json)
    return as_json
