"""Engine options shared by the llama.cpp backends, parsed once and
validated with one-line errors."""

from __future__ import annotations

import functools
import platform
import sys
from dataclasses import asdict, dataclass
from typing import Mapping

from pdx.base.typed_values import dataclass_from
from pdx.contract.backend import BackendConfig, Option
from pdx.domain.hardware import nvidia

_CACHE_TYPES = {t: t for t in ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")}
# The defaults are llama-bench's.
OPTIONS = {
    "n_batch": Option(help="logical batch: most prompt tokens per decode call", default=2048, kind="int", minimum=1),
    "n_ubatch": Option(help="physical batch: tokens per compute step", default=512, kind="int", minimum=1),
    "flash_attn": Option(help="on, off or auto (auto: resolved by llama.cpp)", default="auto", kind="choice",
                         choices={"on": "on", "off": "off", "auto": "auto", "1": "on", "0": "off", "-1": "auto"}),
    "n_gpu_layers": Option(help="layers offloaded to a GPU (99: all)", default=99, kind="int", minimum=0),
    "n_cpu_moe": Option(help="keep the experts of the first N layers in host memory (llama-bench -ncmoe)",
                        default=0, kind="int", minimum=0),
    "type_k": Option(help=f"K-cache type: {', '.join(_CACHE_TYPES)}", default="f16", kind="choice",
                     choices=_CACHE_TYPES),
    "type_v": Option(help="V-cache type", default="f16", kind="choice", choices=_CACHE_TYPES),
    "repack": Option(help="1 or 0: repack weights for the CPU's fastest kernels", default=True, kind="choice",
                     choices={"1": True, "0": False}),
}


@dataclass(frozen=True)
class LlamaSettings:
    """The options a run resolved, each read (or defaulted) by its declaration in OPTIONS."""

    threads: int
    n_batch: int
    n_ubatch: int
    flash_attn: str
    n_gpu_layers: int
    n_cpu_moe: int
    type_k: str
    type_v: str
    repack: bool

    def to_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=1)
def found_gpu() -> str | None:
    """The GPU llama.cpp would offload to here: the first nvidia-smi reports, or Apple Silicon's (Metal)."""
    if platform.system() == "Darwin" and platform.machine() == "arm64":
        return "Apple Silicon (Metal)"
    gpus = nvidia.query()
    return gpus[0]["name"] if gpus else None


_offload_said = False


def say_offload(given: Mapping[str, str], gpu: str | None) -> str | None:
    """Once a process, where a GPU is found and no -ngl given: that every layer goes to it (the default),
    and how to keep the model on the CPU. On a CPU-only machine the default changes nothing: nothing said."""
    global _offload_said
    if _offload_said or "n_gpu_layers" in given or gpu is None:
        return None
    _offload_said = True
    layers = OPTIONS["n_gpu_layers"].default
    said = f"GPU found ({gpu}): offloading every layer (-ngl {layers}); -ngl 0 for the CPU"
    print(said, file=sys.stderr)
    return said


def parse_settings(config: BackendConfig, values: Mapping[str, object]) -> LlamaSettings:
    """The settings of a run from its backend's option values (``Backend.option_values``, read once)."""
    if not _offload_said and "n_gpu_layers" not in config.options:
        say_offload(config.options, found_gpu())
    return dataclass_from(LlamaSettings, {"threads": config.threads or 1, **{key: values[key] for key in OPTIONS}},
                          "llama.cpp options")
