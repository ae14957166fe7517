"""NVIDIA GPUs from ``nvidia-smi --query-gpu ... --format=csv``.

The CSV is read by its header, so output recorded with any column set and
order parses the same way; values may carry units ("81559 MiB", "1980 MHz")
and unified-memory parts print ``[N/A]`` for their memory (DGX Spark).
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess

from pdx.domain.hardware import catalog

QUERY = ("index", "name", "memory.total", "driver_version", "clocks.max.sm", "clocks.max.memory", "compute_cap")
BASIC_QUERY = QUERY[:4]  # drivers before R510 refuse compute_cap and fail the whole query
_FIELDS = {  # nvidia-smi column -> stored key
    "index": "index", "name": "name", "memory.total": "memory_mib", "driver_version": "driver",
    "clocks.max.sm": "clock_sm_max_mhz", "clocks.max.memory": "clock_mem_max_mhz",
    "clocks.current.sm": "clock_sm_mhz", "compute_cap": "compute_cap",
}
_MISSING = {"", "[n/a]", "n/a", "[not supported]", "not supported"}


def _value(key: str, text: str):
    text = text.strip()
    if text.lower() in _MISSING:
        return None
    if key in ("memory_mib", "clock_sm_max_mhz", "clock_mem_max_mhz", "clock_sm_mhz", "index"):
        number = re.match(r"^\d+(\.\d+)?", text)
        return int(float(number.group())) if number else None
    return text


def csv_cells(text: str, columns: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """Each row of ``nvidia-smi --query-gpu=... --format=csv`` output as {field: cell}, the fields named by
    its header (units dropped) or, for ``noheader`` output, by ``columns`` in order."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True))
    header = columns
    if header is None:
        header = tuple(re.sub(r"\s*\[.*\]$", "", h.strip()) for h in rows[0])
        rows = rows[1:]
    return [{column.strip(): cell for column, cell in zip(header, row)} for row in rows]


def parse_csv(text: str, columns: tuple[str, ...] | None = None) -> list[dict]:
    """Rows of ``nvidia-smi --query-gpu=... --format=csv`` output.

    With ``noheader`` output, ``columns`` names the queried fields in order.
    """
    gpus = []
    for cells in csv_cells(text, columns):
        gpu = {key: _value(key, cells[column]) for column, key in _FIELDS.items() if column in cells}
        if gpu.get("name"):
            gpu["memory_bytes"] = gpu["memory_mib"] * 2**20 if gpu.get("memory_mib") else None
            chip = catalog.match_nvidia(gpu["name"])
            gpu["catalog"] = chip.id if chip else None
            gpus.append(gpu)
    return gpus


def query() -> list[dict]:
    """The GPUs ``nvidia-smi`` reports here; none if it is missing or fails."""
    binary = shutil.which("nvidia-smi")
    if not binary:
        return []
    for fields in (QUERY, BASIC_QUERY):
        try:
            out = subprocess.run([binary, f"--query-gpu={','.join(fields)}", "--format=csv"],
                                 capture_output=True, text=True, timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            return []
        if out.returncode == 0:
            return parse_csv(out.stdout)
    return []
