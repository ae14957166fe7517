"""The data type an engine's kernels multiply a weight type in, on a given chip and backend: the compute
bound is the chip's peak for that type, so a type the kernels do not use gives a bound too high to say
anything (gpt-oss's MXFP4 on a Blackwell chip judged by its fp4 peak put prefill at 5-26%).

llama.cpp multiplies its quantised types, MXFP4 included, through int8 dot products (MMQ, dp4a, int8 tensor
cores; its Vulkan and ROCm builds likewise or in fp16), which :func:`pdx.domain.ceilings.compute_dtype` says. fp4 is
the bound only where the kernels compute in fp4: its CUDA build on a chip with fp4 tensor cores (Blackwell),
from the pull request that added it (opened 2025-12-10, after build 7340 was posted on 2025-12-09, so any
build up to 7340 predates it); a build of unknown number may have it, so an upper bound keeps fp4.
"""

from __future__ import annotations

import re
from typing import TypedDict

from pdx.domain.hardware.chip import Chip

# Per lane per clock against an fp32 multiply-add: an int8 dot product of four (dp4a; NVIDIA from Pascal
# GP102, AMD's v_dot4_i32_i8, Intel Xe's DP4A) and packed fp16 do at most this many times the work.
_SHADER_SPEEDUP = {"int8": 4.0, "fp16": 2.0, "fp32": 1.0}


class KernelsSince(TypedDict):
    """Kernels an engine's builds have from a build on: in which backend, after which build, and the source."""

    backend: str
    after_build: int
    source: str


NATIVE_FP4: KernelsSince = {"backend": "cuda", "after_build": 7340,
                            "source": "https://github.com/ggml-org/llama.cpp/pull/17906"}
_BUILD = re.compile(r"^b?(\d+)$")


def build_number(version: str | None) -> int | None:
    """llama.cpp's build number from its version ("b6918", "6918"), or None."""
    match = _BUILD.match(str(version or "").strip())
    return int(match[1]) if match else None


def kernel_dtype(dtype: str, chip: Chip | None, backends: str | None, version: str | None) -> tuple[str, str | None]:
    """The type the kernels compute in for a model whose weights call for ``dtype`` (compute_dtype's), and
    why, where it differs."""
    if dtype != "fp4":
        return dtype, None
    build = build_number(version)
    native = chip is not None and chip.dense_flops("fp4") and NATIVE_FP4["backend"] in (backends or "").lower() \
        and (build is None or build > NATIVE_FP4["after_build"])
    if native:
        return "fp4", None
    return "int8", (f"fp4 weights multiplied through int8 dot products: llama.cpp computes in fp4 only in its "
                    f"CUDA build on fp4 tensor cores after build {NATIVE_FP4['after_build']} "
                    f"({NATIVE_FP4['source']})")


def vulkan_shader_bound(dtype: str, chip: Chip | None, device: dict | None) -> tuple[str, float, str] | None:
    """(type, FLOP/s, why) where ggml-vulkan multiplied on the shader ALUs: its device line says "matrix
    cores: none" (no cooperative-matrix extension through that driver), so a matrix unit's rate (XMX,
    WMMA, tensor cores) is no bound for it. Quantised weights go through int8 dot products where the
    device has them ("int dot: 1"), else fp16 where it has that, else fp32; each at most a multiple of the
    chip's shader fp32 rate (:data:`_SHADER_SPEEDUP`), an upper bound. None: matrix cores, or not said."""
    if not device or str(device.get("matrix_cores", "")).lower() != "none" or chip is None:
        return None
    fp32 = chip.dense_flops("fp32")
    if not fp32:
        return None
    used = "int8" if dtype == "int8" and device.get("int_dot") else "fp16" if device.get("fp16") else "fp32"
    return used, fp32 * _SHADER_SPEEDUP[used], (
        f"ggml-vulkan saw no matrix cores on {device.get('name') or 'the device'} ('matrix cores: none'): "
        f"{used} on the shader ALUs, at most {_SHADER_SPEEDUP[used]:g}x the fp32 rate")
