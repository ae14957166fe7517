"""pdx's own importers, registered through the ``pdx_register_importers`` hook
like any plugin's (entry point ``importers`` in pdx's pyproject.toml)."""

from __future__ import annotations

from pdx.contract.importer import Importer
from pdx.contract.hookspecs import hookimpl

PLUGIN = "importers"  # this module's entry-point name: its importers' bugs keep their tracebacks


@hookimpl
def pdx_register_importers(register) -> None:
    from pdx.registry.importers import (aiperf, guidellm, llama_bench, llama_bench_md, llama_server_log,
                                       mlx_benchmark, vllm_bench, vllm_bench_text)

    def llama_bench_reader(fmt: str):
        return lambda path, text, document, hardware: llama_bench.read(path, text, fmt, document, hardware)

    register(Importer("llama-bench-sql", "llama-bench -o sql (means and standard deviations only)",
                      llama_bench_reader("sql"), llama_bench.looks_like_sql, priority=10))
    register(Importer("mlx-lm-benchmark", "mlx_lm.benchmark text output",
                      lambda path, text, document, hardware: mlx_benchmark.read(path, text, hardware),
                      lambda text, document: mlx_benchmark.looks_like(text), priority=20))
    register(Importer("llama-server-log", "llama-server's log: each request's print_timing lines (prompt eval, "
                                          "eval, draft acceptance)",
                      lambda path, text, document, hardware: llama_server_log.read(path, text, hardware),
                      lambda text, document: document is None and llama_server_log.looks_like(text), priority=25))
    register(Importer("vllm-bench-serve", "vllm bench serve --save-result JSON (--save-detailed: per request)",
                      lambda path, text, document, hardware: vllm_bench.read(path, document, text, hardware),
                      lambda text, document: vllm_bench.looks_like(document), priority=30, json=True))
    register(Importer("vllm-bench-serve-text", "vllm bench serve's printed result (as pasted into issues; "
                                               "benchmark_serving.py's too): one run per result block",
                      lambda path, text, document, hardware: vllm_bench_text.read(path, text, hardware),
                      lambda text, document: document is None and vllm_bench_text.looks_like(text), priority=31))
    register(Importer("guidellm", "GuideLLM's benchmark report JSON (guidellm run --output kind=json)",
                      lambda path, text, document, hardware: guidellm.read(path, document, text, hardware),
                      lambda text, document: guidellm.looks_like(document), priority=32, json=True))
    register(Importer("aiperf", "AIPerf's profile_export_aiperf.json (and the per-request profile_export.jsonl "
                                "beside it)",
                      lambda path, text, document, hardware: aiperf.read(path, document, text, hardware),
                      lambda text, document: aiperf.looks_like(document), priority=34, json=True))
    register(Importer("aiperf-records", "AIPerf's per-request profile_export.jsonl: the run of the export beside it",
                      lambda path, text, document, hardware: aiperf.read_records(path, hardware),
                      lambda text, document: aiperf.looks_like_records(text), priority=36))
    register(Importer("llama-bench-json", "llama-bench -o json", llama_bench_reader("json"),
                      lambda text, document: llama_bench.looks_like(text.lstrip()[:4000]) == "json", priority=40,
                      json=True))
    register(Importer("llama-bench-jsonl", "llama-bench -o jsonl", llama_bench_reader("jsonl"),
                      lambda text, document: llama_bench.looks_like(text.lstrip()[:4000]) == "jsonl", priority=40))
    register(Importer("llama-bench-md", "llama-bench -o md: every table of a text, as pasted into forums",
                      lambda path, text, document, hardware: llama_bench_md.read(path, text, hardware),
                      lambda text, document: llama_bench_md.looks_like(text), priority=90))
