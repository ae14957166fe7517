"""Reading files into run records: pdx bundles and other tools' output.

:func:`read_file` detects the format (or takes the one named), parses the
whole file and returns validated records; nothing is stored until every
record of the file is good, and the registry then stores them in one
transaction.
"""

from __future__ import annotations

import json
from pathlib import Path

from pdx.registry import bundle
from pdx.registry.bundle import fail
from pdx.registry.importers import llama_bench, mlx_benchmark, vllm_bench

FORMATS = ("auto", "bundle", "llama-bench-json", "llama-bench-jsonl", "llama-bench-sql", "vllm-bench-serve",
           "mlx-lm-benchmark")


def _json_or_none(text: str):
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None  # JSON Lines, or a damaged file: the readers say which


def detect(text: str, source) -> tuple[str, object]:
    """The file's format, and its parsed JSON when it is one JSON document."""
    head = text.lstrip()[:4000]
    if head.startswith("CREATE TABLE IF NOT EXISTS llama_bench"):
        return "llama-bench-sql", None
    if mlx_benchmark.looks_like(text):
        return "mlx-lm-benchmark", None
    document = _json_or_none(text) if head[:1] in "[{" else None
    if bundle.is_bundle(document):
        return "bundle", document
    if vllm_bench.looks_like(document):
        return "vllm-bench-serve", document
    kind = llama_bench.looks_like(head)
    if kind:
        return f"llama-bench-{kind}", document
    if head[:1] in "[{" and document is None:
        bundle.parse_json(text, str(source))  # says where the JSON breaks
    raise fail(source, "not a format pdx imports (a pdx bundle, llama-bench json/jsonl/sql, "
                       "vllm bench serve JSON or mlx_lm.benchmark output)")


def read_file(path: str | Path, fmt: str = "auto") -> tuple[str, list[dict]]:
    """(format, records) of a file; raises ImportFileError with one line on any problem."""
    path = Path(path)
    text = bundle.read_text(path)
    if not text.strip():
        raise fail(path, "the file is empty")
    fmt, document = detect(text, path) if fmt == "auto" else (fmt, None)
    if document is None and fmt in ("bundle", "vllm-bench-serve", "llama-bench-json"):
        document = bundle.parse_json(text, str(path))
    if fmt == "bundle":
        return fmt, bundle.read_bundle(document, str(path))
    if fmt.startswith("llama-bench-"):
        records = llama_bench.read(path, text, fmt.removeprefix("llama-bench-"), document)
    elif fmt == "vllm-bench-serve":
        records = vllm_bench.read(path, document, text)
    elif fmt == "mlx-lm-benchmark":
        records = mlx_benchmark.read(path, text)
    else:
        raise fail(path, f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    bundle.validate_records(records, str(path))
    return fmt, records
