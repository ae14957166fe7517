"""Where a run ran: the compute backend of the engine's build (llama-bench's own ``backends``: CUDA,
Metal, Vulkan, ROCm, SYCL, CPU...), the devices it saw and how many layers it offloaded.

One vocabulary for every llama.cpp reader: llama-bench's record fields ``backends`` (comma-joined
registry names, "CPU" where it has no other), ``gpu_info`` (the GPU descriptions, ", "-joined; "/" in
old builds) and ``n_gpu_layers``. llama-bench writes them into each test's engine record; an import
keeps them in the run's ``engine.details``; the in-process and server backends write what they can
read under the same names.
"""

from __future__ import annotations

from collections import Counter

# Backends that run on a GPU (llama.cpp's ggml registry names; "ROCm" is how a HIP build names itself).
GPU_BACKENDS = ("CUDA", "ROCm", "HIP", "Metal", "Vulkan", "SYCL", "MUSA", "CANN", "OpenCL", "Kompute", "RPC")
KEYS = ("backends", "gpu_info", "n_gpu_layers", "offloaded")  # offloaded: "17/17", as llama.cpp logs it


def _sources(run: dict) -> list[dict]:
    """Where the fields may be, first found first: the run's engine details and settings, then its tests'."""
    engine = run.get("engine") or {}
    return [engine.get("details") or {}, engine.get("settings") or {},
            *((t.get("engine") or {}) for t in run.get("tests") or [])]


def _first(sources: list[dict], key: str) -> object:
    return next((s[key] for s in sources if isinstance(s, dict) and s.get(key) not in (None, "")), None)


def devices(gpu_info: object) -> list[str]:
    """The device descriptions of llama-bench's gpu_info, split where no parenthesis is open (Mesa's
    "llvmpipe (LLVM 15.0.6, 256 bits)" is one device)."""
    if not isinstance(gpu_info, str):
        return []
    found, depth, current = [], 0, ""
    for char in gpu_info:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char in ",/" and depth <= 0:
            found.append(current)
            current = ""
        else:
            current += char
    return [d.strip() for d in found + [current] if d.strip()]


def of_run(run: dict) -> dict | None:
    """The run's backend, devices and offload where its records say them (None where they say nothing)."""
    sources = _sources(run)
    backend = _first(sources, "backends")
    if not isinstance(backend, str) or not backend.strip():
        return None
    layers = _first(sources, "n_gpu_layers")
    offloaded = _first(sources, "offloaded")
    return {"backend": backend.strip(), "devices": devices(_first(sources, "gpu_info")),
            "n_gpu_layers": layers if isinstance(layers, int) and not isinstance(layers, bool) else None,
            "offloaded": offloaded if isinstance(offloaded, str) else None}


def on_gpu(backend: str) -> bool:
    return any(name.strip() in GPU_BACKENDS for name in backend.split(","))


def text(placement: dict | None) -> str:
    """"CUDA, NVIDIA H200, ngl 99"; "2x NVIDIA H200" for two alike; the offload only on a GPU backend, the
    layers llama.cpp says it offloaded before the number asked for."""
    if not placement:
        return ""
    parts = [placement["backend"]]
    counted = Counter(placement.get("devices") or [])
    parts += [f"{n}x {name}" if n > 1 else name for name, n in counted.items()]
    if on_gpu(placement["backend"]) and placement.get("offloaded"):
        parts.append(f"{placement['offloaded']} layers offloaded")  # what llama.cpp did, not what was asked
    elif on_gpu(placement["backend"]) and placement.get("n_gpu_layers") is not None:
        parts.append(f"ngl {placement['n_gpu_layers']}")
    return ", ".join(parts)


def backend_label(run: dict) -> str:
    """The run's backend and where it ran: "llamacpp-bench (CUDA, NVIDIA H200, ngl 99)"."""
    where = text(of_run(run))
    return f"{run['backend']} ({where})" if where else run["backend"]
