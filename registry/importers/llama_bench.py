"""llama-bench's own output: ``-o json`` (an array), ``-o jsonl`` (one
object per line) and ``-o sql`` (CREATE TABLE + INSERTs into llama_bench).

One llama-bench invocation can sweep models, threads and settings: records
that share every setting become one pdx run, each record one test, in the
order printed. JSON and JSONL keep every repetition (``samples_ns``), which
become pdx samples; the SQL output keeps only the mean and stddev, stored as
the test's ``reported`` figures. llama-bench does one warm-up run unless told
``--no-warmup``, which its output does not say: warm-up is recorded as 1.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pdx.contract import record
from pdx.domain.engine_version import llama_cpp_version
from pdx.registry import bundle
from pdx.registry.bundle import fail
from pdx.registry.importers.common import (BIG_MAX, described_hardware, described_model, file_facts, imported_run,
                                           integer,
                                           make_test, number, numbers, optional_integer, sample, text,
                                           timestamp)
from pdx.domain.workload import TestSpec

ORIGIN = "llama-bench"
# Fields that vary per test within one run; every other field is run configuration.
_PER_TEST = {"n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts",
             "samples_ns", "samples_ts"}
_REQUIRED = ("model_filename", "n_prompt", "n_gen", "n_threads", "avg_ns", "test_time")
_FLASH: dict[object, str] = {-1: "auto", 0: "off", 1: "on"}  # False and True are 0 and 1 as keys


def looks_like(head: str) -> str | None:
    """"json" or "jsonl" when a file's first characters look like llama-bench's records."""
    if '"build_commit"' in head and '"avg_ns"' in head:
        return "json" if head.startswith("[") else "jsonl" if head.startswith("{") else None
    return None


def looks_like_sql(text: str, document: object = None) -> bool:
    return text.lstrip().startswith("CREATE TABLE IF NOT EXISTS llama_bench")


def parse_jsonl(text: str, source: str | Path) -> list[dict[str, Any]]:
    rows = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(bundle.loads(line))
        except bundle.DuplicateKey as exc:
            raise fail(source, f"line {line_no} names {exc.key[:40]!r} twice, and readers differ on which value "
                               "counts") from None
        except json.JSONDecodeError as exc:
            raise fail(source, f"line {line_no} is not valid JSON (truncated?): {exc.msg}") from None
        except ValueError as exc:  # a number past Python's 4,300 digits
            raise fail(source, f"line {line_no} is not JSON pdx reads: {str(exc).split(':')[0].lower()}") from None
        except RecursionError:
            raise fail(source, f"line {line_no} is nested too deep to be llama-bench output") from None
    return rows


_ALLOWED = {sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_INSERT, sqlite3.SQLITE_READ, sqlite3.SQLITE_SELECT,
            sqlite3.SQLITE_TRANSACTION}


def _deny_all_but_inserts(action: int, table: str | None, *args: str | None) -> int:
    # The SQL is data: only table creation, inserts and reads of it may run
    # (no ATTACH that would write files, no pragmas, no triggers); creating a
    # table updates sqlite_master, which is allowed for that alone.
    if action in _ALLOWED or (action == sqlite3.SQLITE_UPDATE and table == "sqlite_master"):
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def parse_sql(text: str, source: str | Path) -> list[dict[str, Any]]:
    if not text.rstrip().endswith(";"):
        raise fail(source, "the SQL ends mid-statement (truncated?)")
    conn = sqlite3.connect(":memory:")
    try:
        conn.set_authorizer(_deny_all_but_inserts)
        conn.executescript(text)
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute("SELECT * FROM llama_bench ORDER BY rowid")]
    except sqlite3.Error as exc:
        raise fail(source, f"not llama-bench SQL output: {exc}") from None
    finally:
        conn.close()


def _check(rows: object, source: str | Path) -> list[dict[str, Any]]:
    """``rows`` if they are llama-bench's results; a one-line error if not."""
    if not isinstance(rows, list) or not rows:
        raise fail(source, "no llama-bench results in it")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise fail(source, f"result {i} is not an object")
        missing = [k for k in _REQUIRED if k not in row]
        if missing:
            raise fail(source, f"result {i} lacks {', '.join(missing)}: not llama-bench output")
    return rows


def _normalized(i: int, row: dict[str, Any], source: str | Path) -> dict[str, Any]:
    """The row with every field pdx reads converted (and checked); other fields are kept as they are."""
    what = f"result {i}:"
    out = dict(row)
    for key in ("n_prompt", "n_gen", "n_depth", "n_batch", "n_ubatch", "build_number"):
        if row.get(key) is not None:
            out[key] = integer(row[key], f"{what} {key}", source)
    for key in ("model_size", "model_n_params"):
        if row.get(key) is not None:
            out[key] = integer(row[key], f"{what} {key}", source, maximum=BIG_MAX)
    out["n_threads"] = optional_integer(row["n_threads"], f"{what} n_threads", source, 1)
    if row.get("n_gpu_layers") is not None:
        out["n_gpu_layers"] = integer(row["n_gpu_layers"], f"{what} n_gpu_layers", source, -1)
    for key in ("model_filename", "model_type", "build_commit", "cpu_info", "gpu_info", "backends", "type_k",
                "type_v"):
        out[key] = text(row.get(key), f"{what} {key}", source, 1024 if key == "model_filename" else 256)
    out["avg_ns"] = number(row["avg_ns"], f"{what} avg_ns", source, positive=True)
    for key in ("stddev_ns", "avg_ts", "stddev_ts"):
        if row.get(key) is not None:
            out[key] = number(row[key], f"{what} {key}", source)
    out["test_time"] = timestamp(row["test_time"], f"{what} test_time", source)
    if row.get("samples_ns") is not None:
        out["samples_ns"] = [integer(v, f"{what} samples_ns[{j}]", source, 1, BIG_MAX)
                             for j, v in enumerate(_list(row["samples_ns"], f"{what} samples_ns", source))]
    if row.get("samples_ts") is not None:
        out["samples_ts"] = numbers(row["samples_ts"], f"{what} samples_ts", source)
    return out


def _list(value: object, what: str, source: str | Path) -> list[Any]:
    if not isinstance(value, list):
        raise fail(source, f"{what} is not a list")
    return value


def _test(ordinal: int, row: dict[str, Any], source: str | Path) -> record.Test:
    try:
        spec = TestSpec(row["n_prompt"], row["n_gen"], row.get("n_depth") or 0)
    except Exception as exc:
        raise fail(source, f"result {ordinal}: {exc}") from None
    engine = {k: v for k, v in row.items() if k not in ("samples_ns", "samples_ts")}
    samples_ns, samples_ts = row.get("samples_ns"), row.get("samples_ts") or []
    if samples_ns is None:  # the SQL and markdown output: the summary is all there is
        if row.get("avg_ts") is None:
            raise fail(source, f"result {ordinal} has neither samples_ns nor avg_ts")
        engine["reported"] = {"mean": row["avg_ts"], "stddev": row.get("stddev_ts"), "n": None}
        samples = []
    else:
        samples = [sample(ns, spec.n_prompt, spec.n_gen, engine={"ts": ts} if ts is not None else {})
                   for ns, ts in zip(samples_ns, samples_ts + [None] * len(samples_ns))]
    return make_test(ordinal, spec, samples, engine, row["test_time"], warmup=1)


def _flash(value: object) -> object:
    """llama-bench's flash_attn (a bool, 0/1, or "auto"/"on"/"off") as pdx keeps it; anything else as given."""
    return _FLASH.get(value, value) if isinstance(value, (str, int, float, bool, type(None))) else value


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    return {
        "threads": config.get("n_threads"), "n_batch": config.get("n_batch"), "n_ubatch": config.get("n_ubatch"),
        "flash_attn": _flash(config.get("flash_attn")),
        "n_gpu_layers": config.get("n_gpu_layers"), "type_k": config.get("type_k"), "type_v": config.get("type_v"),
        "repack": bool(config["repack"]) if "repack" in config else None, "mode": "llama-bench",
    }


def to_runs(rows: object, path: Path, text_: str, fmt: str, hardware: str | None = None,
            provenance: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One run per group of rows sharing every setting; ``hardware`` names the device (``--hardware``)."""
    rows = [_normalized(i, row, path) for i, row in enumerate(_check(rows, path))]
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        key = json.dumps({k: v for k, v in row.items() if k not in _PER_TEST}, sort_keys=True)
        groups.setdefault(key, []).append(row)
    runs = []
    for key, group in groups.items():
        config = json.loads(key)
        tests = [_test(i, row, path) for i, row in enumerate(group)]
        model_type = (config.get("model_type") or "").strip() or "? ? ?"
        words = model_type.split()  # "llama 7B Q4_0": architecture, size, weight type
        filename = config.get("model_filename") or model_type
        model = described_model(filename, Path(filename).stem if config.get("model_filename") else model_type, "gguf",
                                words[0], words[-1], config.get("model_n_params") or 0, config.get("model_size") or 0,
                                model_type=model_type)
        engine = {"name": "llama.cpp", "version": llama_cpp_version(config.get("build_number")),
                  "commit": config.get("build_commit"), "settings": _settings(config),
                  "details": {k: config[k] for k in ("backends", "cpu_info", "gpu_info") if k in config}}
        reps = max((len(t["samples"]) for t in tests), default=0)
        runs.append(imported_run(
            ORIGIN, "llamacpp-bench", engine, model,
            described_hardware(config.get("cpu_info"), config.get("gpu_info"), hardware),
            tests, file_facts(path, text_, fmt) | (provenance or {}), threads=config.get("n_threads"),
            created_at=tests[0]["started_at"], finished_at=tests[-1]["finished_at"], repetitions=reps, warmup=1,
        ))
    return runs


def read(path: Path, text_: str, fmt: str, document: object = None,
         hardware: str | None = None) -> list[dict[str, Any]]:
    """Runs from llama-bench output; ``document`` is the parsed JSON of ``-o json``."""
    rows: object
    if fmt == "sql":
        rows = parse_sql(text_, path)
    elif fmt == "jsonl":
        rows = parse_jsonl(text_, path)
    else:
        rows = document
    return to_runs(rows, path, text_, fmt, hardware)
