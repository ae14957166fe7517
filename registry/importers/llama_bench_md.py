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
from typing import Any

from pdx.domain.hardware import named
from pdx.registry.importers.common import chip_named_in
from pdx.registry.bundle import fail
from pdx.registry.importers import llama_bench

_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
_TEST = re.compile(r"^(?:pp\s*(?P<pp>\d+))?(?:\s*\+\s*)?(?:tg\s*(?P<tg>\d+))?(?:\s*@\s*d\s*(?P<depth>\d+))?$")
_RATE = re.compile(r"^(?P<mean>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?:\s*(?:±|\+/-|\+-)\s*(?P<std>\d+(?:\.\d+)?"
                   r"(?:[eE][+-]?\d+)?))?$")
_SIZE = re.compile(r"^(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[KMGT]i?B|B)$")
_PARAMS = re.compile(r"^(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[KMBT])?$")
_BUILD = re.compile(r"^build:\s*(?P<commit>[0-9a-fA-F]{4,64})\s*\((?P<number>\d+)\)\s*$")
_BYTES: dict[str | None, float] = {
    "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_COUNT: dict[str | None, float] = {None: 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
# Column -> llama-bench's JSON field, for columns whose values are settings.
_FIELDS = {"threads": "n_threads", "ngl": "n_gpu_layers", "n_batch": "n_batch", "n_ubatch": "n_ubatch",
           "type_k": "type_k", "type_v": "type_v", "fa": "flash_attn", "mmap": "use_mmap", "backend": "backends",
           "sm": "split_mode", "mg": "main_gpu", "embd": "embeddings", "repack": "repack", "dev": "devices",
           "nkvo": "no_kv_offload", "ts": "tensor_split"}
_INTEGERS = {"n_threads", "n_gpu_layers", "n_batch", "n_ubatch", "main_gpu"}
_FLAGS = {"flash_attn", "use_mmap", "embeddings", "repack",
          "no_kv_offload"}  # 0/1 in most builds, words (on, auto) in some


_QUOTE = re.compile(r"^\s*(?:>\s?)+")  # a table quoted in a reply ("> | model | ...") is read as the table
# compare-llama-bench's column names -> llama-bench's (its tables pair two builds: "t/s master", "t/s 56ac96f6d")
_PRETTY = {"cpu": "cpu_info", "gpu": "gpu_info", "backend": "backend", "model": "model", "model size [gib]": "size_gib",
           "num. of par.": "params_count", "batch size": "n_batch", "microbatch size": "n_ubatch", "threads": "threads",
           "k type": "type_k", "v type": "type_v", "gpu layers": "ngl", "split mode": "sm", "main gpu": "mg",
           "nkvo": "nkvo", "flashattention": "fa", "flash attention": "fa", "tensor split": "ts", "use mmap": "mmap",
           "embeddings": "embd", "test": "test", "t/s": "t/s", "speedup": "speedup"}
# "t/s master", "t/s 56ac96f6d"; newer compare-llama-bench: "master t/s b10643", "PR t/s 2df4b95"
_PAIRED = re.compile(r"^(?:(?P<side>\S.*?)\s+)?t/s\s+(?P<build>\S.*)$", re.I)
_BUILD_NUMBER = re.compile(r"^b(\d+)$")
# A summary table people make from several llama-bench runs: a model column, the tests as columns ("pp 512",
# "tg 128") and whatever else they measured beside them ("PPL"); its build is sometimes in the model's header.
_PIVOT = "test:"  # marks a test column's name in such a header
_HEADER_BUILD = re.compile(r"\(build:?\s*(?P<commit>[0-9a-f]{6,40})\)", re.I)
_HEX = re.compile(r"^[0-9a-f]{6,40}$")


def _unquoted(line: str) -> str:
    return _QUOTE.sub("", line)


def looks_like(text: str) -> bool:
    """Whether the text holds a llama-bench table: a header row naming a model, a test and a t/s column
    (with or without outer pipes; compare-llama-bench's "t/s <build>" columns too)."""
    return any(_header(_cells(line)) or _partial(_cells(line)) or _pivoted(_cells(line))
               for line in map(_unquoted, text.splitlines()[:20000]) if "|" in line)


def _partial(cells: list[str]) -> bool:
    """A header with a rate column and a test or model column: a llama-bench table that lost a column, read
    so its refusal can name which."""
    lower = [c.lower() for c in cells]
    return any(c == "t/s" or c.startswith("t/s ") for c in lower) and ("test" in lower or "model" in lower)


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [c.strip() for c in line.split("|")]


def _header(cells: list[str]) -> list[str] | None:
    """The header's column names as llama-bench's (compare-llama-bench's pretty names mapped), or None for a
    row that is no header: one names a model, a test and a rate ("t/s", or a "t/s <build>" per build)."""
    names = [c if _PAIRED.match(c) else _PRETTY.get(c.lower(), c) for c in cells]
    rated = "t/s" in names or any(_PAIRED.match(n) for n in names)
    return names if "test" in names and "model" in names and rated else None


def _pivoted(cells: list[str]) -> list[str] | None:
    """The names of a header whose tests are columns ("Model (Build: 9fb13f9) | Size | PPL | pp 512 | tg 128"):
    "model" first, a test column marked so, llama-bench's names for the rest; None for any other row."""
    if not cells or not cells[0].lower().startswith("model") or "test" in (c.lower() for c in cells):
        return None
    names = ["model"] + [_PIVOT + c if _is_test(c) else _PRETTY.get(c.lower(), c.lower()) for c in cells[1:]]
    return names if any(n.startswith(_PIVOT) for n in names) else None


def _is_test(cell: str) -> bool:
    test = _TEST.match(cell)
    return bool(test and (test["pp"] or test["tg"]))


def _is_header(cells: list[str]) -> bool:
    return _header(cells) is not None


def _quantity(text: str, pattern: re.Pattern[str], scale: dict[str | None, float], what: str, where: str,
              source: str | Path) -> int:
    match = pattern.match(text)
    if not match:
        raise fail(source, f"{where}: {what} {text!r} is not a llama-bench {what}")
    return round(float(match["value"]) * scale[match["unit"]])


def _setting(field: str, value: str, where: str, source: str | Path) -> int | str:
    if field in _FLAGS:
        return int(value) if value in ("0", "1", "-1") else value
    if field not in _INTEGERS:
        return value
    try:
        return int(value)
    except ValueError:
        raise fail(source, f"{where}: {field} {value!r} is not a whole number") from None


def _row(header: list[str], cells: list[str], where: str, source: str | Path, when: str) -> list[dict[str, Any]]:
    """A table row as llama-bench's JSON records: one, or (compare-llama-bench) one per build compared."""
    if len(cells) != len(header):
        raise fail(source, f"{where}: {len(cells)} cells under {len(header)} columns (a damaged table?)")
    values = dict(zip(header, cells))
    if any(c.startswith(_PIVOT) for c in header):  # one record per test column; columns pdx has no field for left
        kept = {c: v for c, v in values.items() if c in ("model", "size", "params") or c in _FIELDS}
        return [_one(kept | {"test": c.removeprefix(_PIVOT), "t/s": v}, where, source, when)
                for c, v in values.items() if c.startswith(_PIVOT) and v.strip()]
    paired = [(c, " ".join(p for p in found.group("side", "build") if p))
              for c in header if (found := _PAIRED.match(c))]
    if not paired:
        return [_one(values, where, source, when)]
    shared = {k: v for k, v in values.items() if not _PAIRED.match(k) and k != "speedup"}
    return [_one(shared | {"t/s": values[column]}, where, source, when) | {"compared_build": build}
            for column, build in paired]


def _one(values: dict[str, str], where: str, source: str | Path, when: str) -> dict[str, Any]:
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
    if "size_gib" in values:  # compare-llama-bench: "Model size [GiB]", a bare number
        row["model_size"] = _quantity(f"{values['size_gib']} GiB", _SIZE, _BYTES, "model size", where, source)
    for column in ("params", "params_count"):
        if column in values:
            row["model_n_params"] = _quantity(values[column], _PARAMS, _COUNT, "params", where, source)
    for column in ("gpu_info", "cpu_info"):
        if values.get(column):
            row[column] = values[column]
    for column, value in values.items():
        if column in ("model", "size", "size_gib", "params", "params_count", "test", "t/s", "gpu_info", "cpu_info"):
            continue
        field = _FIELDS.get(column, column)
        row[field] = _setting(field, value, where, source)
    row.setdefault("n_threads", None)  # a GPU build's table prints ngl in place of threads; a trimmed one neither
    return row


def _refusal(lines: list[str]) -> str:
    """Why a text holds no table pdx reads, in one line: the first table-like header and what it lacks."""
    for line_no, line in enumerate(lines, 1):
        cells = [c.lower() for c in _cells(_unquoted(line))] if "|" in line else []
        if any(c in ("t/s", "test", "model") or c.startswith("t/s ") for c in cells):
            lacking = [c for c in ("model", "test", "t/s") if not any(x == c or x.startswith(f"{c} ") for x in cells)]
            return (f"the table at line {line_no} has no {', '.join(repr(c) for c in lacking)} column: a llama-bench "
                    "table names its model, test and t/s")
    return "no llama-bench table in it (a markdown table with model, test and t/s columns)"


def parse(text: str, source: str | Path, when: str) -> list[list[dict[str, Any]]]:
    """The rows of every table in the text, table by table, each row with its table's build. A table's
    lines may leave out their outer pipes (a rendered table copied by hand)."""
    tables: list[list[dict[str, Any]]] = []
    header, lines, header_build = None, text.splitlines(), None
    for line_no, line in enumerate(lines, 1):
        stripped = _unquoted(line).strip()
        columns = (_header(_cells(stripped)) or _pivoted(_cells(stripped))) if "|" in stripped else None
        if columns and (found := _HEADER_BUILD.search(_cells(stripped)[0])):
            header_build = found["commit"]
        if header is not None and "|" in stripped:
            cells = _cells(stripped)
            if all(_SEPARATOR_CELL.match(c) for c in cells):
                continue
            if columns:
                header = columns
                tables.append([])
                continue
            tables[-1].extend(_row(header, cells, f"line {line_no}", source, when))
            if header_build:
                for row in tables[-1]:
                    row.setdefault("build_commit", header_build)
            continue
        if columns:
            header = columns
            tables.append([])
            continue
        header, header_build = None, None
        build = _BUILD.match(stripped)
        if build and tables:
            for row in tables[-1]:
                row.setdefault("build_commit", build["commit"])
                row.setdefault("build_number", int(build["number"]))
    tables = [t for t in tables if t]
    if not tables:
        raise fail(source, _refusal(lines))
    for table in tables:  # compare-llama-bench: each build its own run, its label its commit where it is one
        for row in table:
            for word in (row.get("compared_build") or "").split():
                if _HEX.match(word.lower()) and not _BUILD_NUMBER.match(word):
                    row.setdefault("build_commit", word)
                elif number := _BUILD_NUMBER.match(word):
                    row.setdefault("build_number", int(number[1]))
    return tables


def read(path: Path, text: str, hardware: str | None = None) -> list[dict[str, Any]]:
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(microsecond=0).isoformat()
    rows = [row for table in parse(text, path, when) for row in table]
    provenance: dict[str, Any] = {"created_at": "the file's modification time (a table has no times)",
                                  "figures": "the table's means and standard deviations; no samples"}
    if devices := named.vulkan_devices(text):  # what the kernels multiply on: matrix cores or shader ALUs
        provenance["vulkan_devices"] = devices
    builds = list(dict.fromkeys(r["compared_build"] for r in rows if r.get("compared_build")))
    if builds:
        provenance["compared"] = (f"compare-llama-bench output: builds {' and '.join(builds)} side by side, each a "
                                  "run; its speed-up column is their ratio")
    return llama_bench.to_runs(_with_named_chip(rows, text, provenance), path, text, "md", hardware, provenance)


def _with_named_chip(rows: list[dict[str, Any]], text: str, provenance: dict[str, Any]) -> list[dict[str, Any]]:
    """A table names no device: the one chip the post's words name (narrowed by the backend column) is
    taken for it, as llama-bench's own gpu_info or cpu_info would have named it; several, and none is
    taken (the ceilings ask for --hardware); a name pdx does not know as written ("RTX 4060 Ti SUPER")
    is kept so the ceiling can say which."""
    said = chip_named_in(text, ",".join(sorted({str(r.get("backends") or "") for r in rows})), provenance)
    if said is None:
        return rows
    chip, count = said
    if chip.vendor == "Apple" or chip.kind == "cpu" or chip.match.get("cpu_model"):  # a SoC its CPU names
        return [row | {"cpu_info": chip.name} for row in rows]
    return [row | {"gpu_info": ", ".join([chip.name] * count)} for row in rows]  # as llama-bench lists devices
