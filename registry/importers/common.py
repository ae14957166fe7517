"""What every importer of another tool's output shares: the run record
around the tests it parsed, and identities for models and machines that the
tool only described."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import pdx
from pdx.registry.bundle import content_id


def _hash(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def described_model(path: str, name: str, fmt: str, architecture: str = "?", dtype: str = "?",
                    n_params: int = 0, file_bytes: int = 0, **facts) -> dict:
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


def described_hardware(cpu: str = "", gpu: str = "") -> dict:
    if not cpu and not gpu:
        return {"id": "unrecorded", "kind": "unknown", "name": "not recorded by the tool", "cpu": {}, "gpus": []}
    return {"id": _hash({"cpu": cpu, "gpu": gpu})[:16], "kind": "gpu" if gpu else "cpu", "name": (gpu or cpu)[:256],
            "cpu": {"name": cpu} if cpu else {}, "gpus": [g.strip() for g in gpu.split(",") if g.strip()]}


def make_test(ordinal: int, spec, samples: list[dict], engine: dict, when: str | None,
                warmup: int = 0, status: str = "ok", error: str | None = None) -> dict:
    return {
        "ordinal": ordinal, "name": spec.name, "kind": spec.kind, "n_prompt": spec.n_prompt, "n_gen": spec.n_gen,
        "depth": spec.depth, "batch": spec.batch, "status": status, "error": error, "warmup": warmup,
        "started_at": when, "finished_at": when, "engine": engine, "ceilings": None, "adaptive": None,
        "samples": samples,
    }


def sample(ns: float, n_prompt: int, n_gen: int, prompt_ns: float | None = None, gen_ns: float | None = None,
           engine: dict | None = None) -> dict:
    return {"ns": max(1, round(ns)), "n_prompt": n_prompt, "n_gen": n_gen,
            "prompt_ns": None if prompt_ns is None else round(prompt_ns),
            "gen_ns": None if gen_ns is None else round(gen_ns), "engine": engine or {}}


def file_facts(path: Path, text: str, fmt: str) -> dict:
    return {"file": str(path), "format": fmt, "file_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "imported_at": datetime.now(timezone.utc).isoformat()}


def imported_run(origin: str, backend: str, engine: dict, model: dict, hardware: dict, tests: list[dict],
                 provenance: dict, threads: int | None = None, created_at: str | None = None,
                 finished_at: str | None = None, repetitions: int = 0, warmup: int = 0,
                 environment: dict | None = None, status: str = "complete", error: str | None = None) -> dict:
    """A complete run record for something another tool measured; its id is its content's hash."""
    record = {
        "id": "", "status": status, "created_at": created_at, "finished_at": finished_at or created_at,
        "backend": backend, "engine": {"version": None, "commit": None, "settings": {}, "details": {}} | engine,
        "threads": threads, "options": {},
        "workload": {"tests": [t["name"] for t in tests], "repetitions": repetitions, "warmup": warmup, "seed": 0},
        "command": "", "error": error, "parent_id": None, "pdx_version": pdx.__version__, "origin": origin,
        "provenance": provenance, "tags": [], "model": model, "hardware": hardware,
        "environment": {"hostname": "", "os": "", "python": "", "pdx_version": "", "imported_from": origin}
        | (environment or {}),
        "ceiling_basis": None,
        "tests": tests,
    }
    record["id"] = content_id(record)
    return record
