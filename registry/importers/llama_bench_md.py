"""llama-bench's markdown table (``-o md``, its default), as printed and as
pasted into forum threads: every table in the text is read.

A table has llama-bench's columns: ``model`` (its type, e.g. ``llama 7B
Q4_0``), ``size`` (``3.56 GiB``), ``params`` (``6.74 B``), ``backend``,
``threads`` and/or ``ngl``, any settings columns (``n_batch``, ``n_ubatch``,
``fa``, ``mmap``, ``type_k``...), ``test`` (``pp512``, ``tg128``,
``pp512+tg128``, ``pp2048 @ d4096``; older builds wrote ``pp 512``) and
``t/s`` (``61.19 ± 0.04``). The ``build: <commit> (<number>)`` line that
follows a table names its build. The table keeps only each test's mean and
standard deviation: they are stored as the tool's ``reported`` figures, no
samples, and every page flags them so. Rows become llama-bench JSON records
and take the JSON importer's path from there (one run per group of rows that
share every setting). The table names no device: give ``--hardware NAME``
for ceilings, or name it in the text around the table ("my M2 Ultra numbers"): one chip named there is
taken for the table. It has no time either: the file's modification time is used.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from pdx.domain.hardware import named
from pdx.registry.bundle import fail
from pdx.registry.importers import llama_bench

_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
_TEST = re.compile(r"^(?:pp\s*(?P<pp>\d+))?(?:\s*\+\s*)?(?:tg\s*(?P<tg>\d+))?(?:\s*@\s*d\s*(?P<depth>\d+))?$")
_RATE = re.compile(r"^(?P<mean>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?:\s*(?:±|\+/-|\+-)\s*(?P<std>\d+(?:\.\d+)?"
                   r"(?:[eE][+-]?\d+)?))?$")
_SIZE = re.compile(r"^(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[KMGT]i?B|B)$")
_PARAMS = re.compile(r"^(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[KMBT])?$")
_BUILD = re.compile(r"^build:\s*(?P<commit>[0-9a-fA-F]{4,64})\s*\((?P<number>\d+)\)\s*$")
_BYTES = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30,
          "TiB": 2**40}
_COUNT = {None: 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
# Column -> llama-bench's JSON field, for columns whose values are settings.
_FIELDS = {"threads": "n_threads", "ngl": "n_gpu_layers", "n_batch": "n_batch", "n_ubatch": "n_ubatch",
           "type_k": "type_k", "type_v": "type_v", "fa": "flash_attn", "mmap": "use_mmap", "backend": "backends",
           "sm": "split_mode", "mg": "main_gpu", "embd": "embeddings", "repack": "repack", "dev": "devices"}
_INTEGERS = {"n_threads", "n_gpu_layers", "n_batch", "n_ubatch", "main_gpu"}
_FLAGS = {"flash_attn", "use_mmap", "embeddings", "repack"}  # 0/1 in most builds, words (on, auto) in some


_QUOTE = re.compile(r"^\s*(?:>\s?)+")  # a table quoted in a reply ("> | model | ...") is read as the table


def _unquoted(line: str) -> str:
    return _QUOTE.sub("", line)


def looks_like(text: str) -> bool:
    """Whether the text holds a llama-bench table: a header row naming both a test and a t/s column."""
    return any(_is_header(_cells(line)) for line in map(_unquoted, text.splitlines()[:20000])
               if line.lstrip().startswith("|"))


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [c.strip() for c in line.split("|")]


def _is_header(cells: list[str]) -> bool:
    return "test" in cells and "t/s" in cells and "model" in cells


def _quantity(text: str, pattern: re.Pattern, scale: dict, what: str, where: str, source) -> int:
    match = pattern.match(text)
    if not match:
        raise fail(source, f"{where}: {what} {text!r} is not a llama-bench {what}")
    return round(float(match["value"]) * scale[match["unit"]])


def _setting(field: str, value: str, where: str, source):
    if field in _FLAGS:
        return int(value) if value in ("0", "1", "-1") else value
    if field not in _INTEGERS:
        return value
    try:
        return int(value)
    except ValueError:
        raise fail(source, f"{where}: {field} {value!r} is not a whole number") from None


def _row(header: list[str], cells: list[str], where: str, source, when: str) -> dict:
    if len(cells) != len(header):
        raise fail(source, f"{where}: {len(cells)} cells under {len(header)} columns (a damaged table?)")
    values = dict(zip(header, cells))
    test = _TEST.match(values["test"])
    if not test or not (test["pp"] or test["tg"]):
        raise fail(source, f"{where}: test {values['test']!r} is not a llama-bench test (pp512, tg128, "
                           "pp512+tg128, pp512 @ d4096)")
    rate = _RATE.match(values["t/s"])
    if not rate:
        raise fail(source, f"{where}: t/s {values['t/s']!r} is not a rate (61.19 ± 0.04)")
    n_prompt, n_gen = int(test["pp"] or 0), int(test["tg"] or 0)
    mean = float(rate["mean"])
    if mean <= 0:
        raise fail(source, f"{where}: t/s {values['t/s']!r} is not positive")
    row = {"model_filename": None, "model_type": values["model"], "n_prompt": n_prompt, "n_gen": n_gen,
           "n_depth": int(test["depth"] or 0), "avg_ts": mean,
           "stddev_ts": float(rate["std"]) if rate["std"] is not None else None,
           "avg_ns": (n_prompt + n_gen) / mean * 1e9, "test_time": when}
    if "size" in values:
        row["model_size"] = _quantity(values["size"], _SIZE, _BYTES, "size", where, source)
    if "params" in values:
        row["model_n_params"] = _quantity(values["params"], _PARAMS, _COUNT, "params", where, source)
    for column, value in values.items():
        if column in ("model", "size", "params", "test", "t/s"):
            continue
        field = _FIELDS.get(column, column)
        row[field] = _setting(field, value, where, source)
    if "n_threads" not in row and "n_gpu_layers" not in row and not {"size", "params", "backend"} <= set(values):
        raise fail(source, f"{where}: the table has no threads or ngl column, nor size, params and backend: "
                           "not llama-bench output")
    row.setdefault("n_threads", None)  # a GPU build's table prints ngl in place of threads; a trimmed one neither
    return row


def parse(text: str, source, when: str) -> list[list[dict]]:
    """The rows of every table in the text, table by table, each row with its table's build."""
    tables: list[list[dict]] = []
    header, lines = None, text.splitlines()
    for line_no, line in enumerate(lines, 1):
        stripped = _unquoted(line).strip()
        if header is not None and stripped.startswith("|"):
            cells = _cells(stripped)
            if all(_SEPARATOR_CELL.match(c) for c in cells):
                continue
            if _is_header(cells):
                header = cells
                tables.append([])
                continue
            tables[-1].append(_row(header, cells, f"line {line_no}", source, when))
            continue
        if stripped.startswith("|") and _is_header(_cells(stripped)):
            header = _cells(stripped)
            tables.append([])
            continue
        header = None
        build = _BUILD.match(stripped)
        if build and tables:
            for row in tables[-1]:
                row.setdefault("build_commit", build["commit"])
                row.setdefault("build_number", int(build["number"]))
    tables = [t for t in tables if t]
    if not tables:
        raise fail(source, "no llama-bench table in it (a markdown table with model, test and t/s columns)")
    return tables


def read(path: Path, text: str, hardware: str | None = None) -> list[dict]:
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(microsecond=0).isoformat()
    rows = [row for table in parse(text, path, when) for row in table]
    provenance = {"created_at": "the file's modification time (a table has no times)",
                  "figures": "the table's means and standard deviations; no samples"}
    return llama_bench.to_runs(_with_named_chip(rows, text, provenance), path, text, "md", hardware, provenance)


def _with_named_chip(rows: list[dict], text: str, provenance: dict) -> list[dict]:
    """A table names no device: the one chip the post's words name (narrowed by the backend column) is
    taken for it, as llama-bench's own gpu_info or cpu_info would have named it; several, and none is
    taken (the ceilings ask for --hardware)."""
    chips = named.narrowed(named.chips_in(text), ",".join(sorted({str(r.get("backends") or "") for r in rows})))
    if not chips:
        return rows
    if len(chips) > 1:
        provenance["chips_named"] = [c.name for c, _ in chips]
        return rows
    chip, count = chips[0]
    provenance["chip"] = f"{f'{count} x ' if count > 1 else ''}{chip.name}, named in the text around the table"
    if chip.vendor == "Apple" or chip.kind == "cpu" or chip.match.get("cpu_model"):  # a SoC its CPU names
        return [row | {"cpu_info": chip.name} for row in rows]
    return [row | {"gpu_info": ", ".join([chip.name] * count)} for row in rows]  # as llama-bench lists devices
