"""Engine options shared by the llama.cpp backends, parsed once and
validated with one-line errors."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pdx.backend import BackendConfig, int_option
from pdx.errors import PdxError

OPTIONS = {
    "n_batch": "logical batch: most prompt tokens per decode call (default 2048, as llama-bench)",
    "n_ubatch": "physical batch: tokens per compute step (default 512)",
    "flash_attn": "on, off or auto (default auto, resolved by llama.cpp)",
    "n_gpu_layers": "layers offloaded to a GPU (default 99: all)",
    "n_cpu_moe": "keep the experts of the first N layers in host memory (llama-bench -ncmoe; default 0)",
    "type_k": "K-cache type: f16, q8_0, q4_0... (default f16)",
    "type_v": "V-cache type (default f16)",
    "repack": "1 or 0: repack weights for the CPU's fastest kernels (default 1)",
}
_FLASH = {"on": "on", "1": "on", "off": "off", "0": "off", "auto": "auto", "-1": "auto"}
_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")


@dataclass(frozen=True)
class LlamaSettings:
    threads: int
    n_batch: int = 2048
    n_ubatch: int = 512
    flash_attn: str = "auto"
    n_gpu_layers: int = 99
    n_cpu_moe: int = 0
    type_k: str = "f16"
    type_v: str = "f16"
    repack: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


def parse_settings(config: BackendConfig) -> LlamaSettings:
    options = dict(config.options)
    flash = options.get("flash_attn", "auto").lower()
    if flash not in _FLASH:
        raise PdxError(f"-o flash_attn={flash}: use on, off or auto")
    for key in ("type_k", "type_v"):
        if options.get(key, "f16").lower() not in _CACHE_TYPES:
            raise PdxError(f"-o {key}={options[key]}: use one of {', '.join(_CACHE_TYPES)}")
    repack = options.get("repack", "1")
    if repack not in ("0", "1"):
        raise PdxError(f"-o repack={repack}: use 1 or 0")
    return LlamaSettings(
        threads=config.threads or 1,
        n_batch=int_option(options, "n_batch", 2048, 1),
        n_ubatch=int_option(options, "n_ubatch", 512, 1),
        flash_attn=_FLASH[flash],
        n_gpu_layers=int_option(options, "n_gpu_layers", 99, 0),
        n_cpu_moe=int_option(options, "n_cpu_moe", 0, 0),
        type_k=options.get("type_k", "f16").lower(),
        type_v=options.get("type_v", "f16").lower(),
        repack=repack == "1",
    )
