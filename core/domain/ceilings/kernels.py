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
