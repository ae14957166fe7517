"""``nvidia-smi``'s two outputs read as GPU readings (:mod:`pdx.measure.conditions.gpu_figures`): the CSV of
``--query-gpu=... --format=csv`` (with or without units and header) and the indented report of
``nvidia-smi -q``. Whatever a line does not hold as a number ("N/A", "[Not Supported]") reads None."""

from __future__ import annotations

import re

from pdx.measure.conditions.gpu_figures import FIGURES, REASONS, reasons_from_mask
from pdx.domain.hardware import nvidia

# index and name first, then each figure, then the clocks event reasons' bit mask (the older name,
# clocks_throttle_reasons.active, is the same field).
REASONS_FIELD = "clocks_event_reasons.active"
QUERY = ",".join(["index", "name", *(f.query for f in FIGURES), REASONS_FIELD])
# What an older driver takes instead: the reasons under their former name, then none (a field a driver does
# not know fails the whole query).
QUERIES = (QUERY, QUERY.replace(REASONS_FIELD, "clocks_throttle_reasons.active"),
           QUERY.replace("," + REASONS_FIELD, ""))
_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*([A-Za-z%°]*)\s*$")
_QUERY_ALIASES = {"clocks.sm": "clocks.current.sm", "clocks.mem": "clocks.current.memory",
                  "clocks.max.mem": "clocks.max.memory", "clocks.max.sm": "clocks.max.sm",
                  "clocks_throttle_reasons.active": REASONS_FIELD, "power.draw.instant": "power.draw"}


def number(text: str | None) -> float | None:
    """"405 MHz", "700.00 W", "35" or "35 C" as a number; None for "N/A" and anything else."""
    found = _NUMBER.match(text or "")
    return float(found.group(1)) if found else None


def _mask(text: str) -> list[str] | None:
    try:
        return reasons_from_mask(int(text.strip(), 16))
    except ValueError:
        return None


def _field(header: str) -> str:
    return _QUERY_ALIASES.get(header.strip(), header.strip())


def parse_query(text: str) -> list[dict]:
    """Each GPU of ``nvidia-smi --query-gpu=... --format=csv``: index (its row where not queried), name and
    one reading. A header row names the fields; without one, :data:`QUERY`'s order is taken."""
    first = (text.strip().splitlines() or [""])[0]
    header = any(cell.strip().split(" [")[0] in ("name", "index") for cell in first.split(","))
    devices = []
    for position, row in enumerate(nvidia.csv_cells(text, None if header else tuple(QUERY.split(",")))):
        cells = {_field(k): v.strip() for k, v in row.items()}
        reading: dict = {f.key: number(cells.get(f.query)) for f in FIGURES}
        reading["reasons"] = _mask(cells[REASONS_FIELD]) if REASONS_FIELD in cells else None
        index = number(cells.get("index"))
        devices.append({"index": int(index) if index is not None else position,
                        "name": cells.get("name") or "?", "reading": reading})
    return devices


def _sections(text: str) -> list[dict[tuple[str, ...], str]]:
    """``nvidia-smi -q`` as one {path: value} per GPU, a line's path being the lines it is indented under."""
    gpus: list[dict[tuple[str, ...], str]] = []
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        key, _, value = line.strip().partition(":")
        if indent == 0:
            if key.startswith("GPU "):
                gpus.append({})
            stack = []
            continue
        if not gpus:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = tuple(name for _, name in stack) + (key.strip(),)
        gpus[-1][path] = value.strip()
        stack.append((indent, key.strip()))
    return gpus


_REASON_SECTIONS = ("Clocks Event Reasons", "Clocks Throttle Reasons")


def parse_q(text: str) -> list[dict]:
    """Each GPU of ``nvidia-smi -q``: index (its order), name ("?" where the report leaves it out, as
    ``-q -d PERFORMANCE,POWER,CLOCK`` does) and one reading; reasons None where the report has none."""
    devices = []
    for index, values in enumerate(_sections(text)):
        reading: dict = {}
        for figure in FIGURES:
            found = [values[p] for p in figure.smi_q if p in values]
            reading[figure.key] = number(found[0]) if found else None
        active = {path[-1]: value for path, value in values.items()
                  if len(path) > 1 and path[0] in _REASON_SECTIONS}
        reading["reasons"] = ([r.key for r in REASONS if active.get(r.words) == "Active"] if active else None)
        minor = number(values.get(("Minor Number",)))
        devices.append({"index": int(minor) if minor is not None else index,
                        "name": values.get(("Product Name",)) or "?", "reading": reading})
    return devices
