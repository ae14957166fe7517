"""How long the one record check (pdx.registry.validate) takes on a large run: prints figures,
asserts nothing (timings depend on the machine). Run: python tests/benchmarks/record_check.py"""

import time
import uuid

from pdx.registry.bundle import digest
from pdx.registry.validate import check_records


def big_record(n_tests: int, n_samples: int, n_requests: int, n_events: int) -> dict:
    sample = {"ns": 1_000_000, "n_prompt": 512, "n_gen": 0, "prompt_ns": None, "gen_ns": None, "engine": {"x": 1}}
    request = {"sample_idx": 0, "idx": 0, "role": "load", "n_prompt": 8, "max_tokens": 2, "n_gen": 2, "send_ns": 5,
               "first_ns": 10, "end_ns": 30, "status": "ok", "error": None, "http_status": 200,
               "finish_reason": "length", "events": [[i, 1] for i in range(n_events)], "usage": {}, "engine": {}}
    test = {"ordinal": 0, "name": "pp512", "kind": "pp", "n_prompt": 512, "n_gen": 0, "depth": 0, "batch": 1,
            "status": "ok", "error": None, "warmup": 1, "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:00:01+00:00", "engine": {}, "ceilings": None, "adaptive": None,
            "spec": {}, "samples": [sample] * n_samples, "requests": [request] * n_requests}
    model = {"id": "a" * 64, "sha256": "a" * 64, "name": "m", "path": "/m", "format": "gguf", "architecture": "llama",
             "n_params": 1, "dtype": "f16", "n_layers": 1, "n_heads": 1, "n_kv_heads": 1, "head_dim": 1, "n_embd": 1,
             "n_ff": 1, "n_vocab": 1, "n_ctx_train": 1, "file_bytes": 1, "synthetic": None, "extra": {}}
    return {"id": uuid.uuid4().hex, "status": "complete", "created_at": "2026-01-01T00:00:00+00:00",
            "finished_at": None, "backend": "b", "engine": {"name": "e", "version": None, "commit": None,
                                                            "settings": {}, "details": {}},
            "threads": 1, "options": {}, "workload": {"tests": ["pp512"], "repetitions": 1, "warmup": 0, "seed": 0},
            "command": "", "error": None, "parent_id": None, "pdx_version": "0", "origin": "pdx", "provenance": {},
            "tags": [], "model": model, "hardware": {"id": "h", "kind": "cpu", "name": "h"}, "environment": {},
            "ceiling_basis": None, "tests": [dict(test, ordinal=i) for i in range(n_tests)]}


for shape in ((10, 10, 0, 0), (20, 100, 0, 0), (4, 10, 1000, 64)):
    records = [big_record(*shape) for _ in range(10)]
    start = time.perf_counter()
    check_records(records, "bench")
    checked = time.perf_counter() - start
    start = time.perf_counter()
    for r in records:
        digest(r)
    hashed = time.perf_counter() - start
    print(f"10 runs of {shape[0]} tests x {shape[1]} samples, {shape[2]} requests x {shape[3]} events: "
          f"check {checked * 1000:.0f} ms, digest {hashed * 1000:.0f} ms")
