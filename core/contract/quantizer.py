"""The type a plugin registers to make GGUF types with an engine's own tool
(``pdx_register_quantizers``); plugins import it from :mod:`pdx.domain.synth.quantizers`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pdx.contract.errors import PdxError


@dataclass(frozen=True)
class Quantizer:
    name: str
    types: tuple[str, ...]  # upper case, as llama-quantize names them
    quantize: Callable[[Path, Path, str], Path] = field(compare=False)
    plugin: str = ""


def check_quantizer(quantizer: object) -> Quantizer:
    """A registered quantiser, vetted before pdx relies on it."""
    if not isinstance(quantizer, Quantizer):
        raise PdxError(f"it registered {quantizer!r}, which is not a pdx.domain.synth.quantizers.Quantizer")
    if not quantizer.name or not quantizer.types or not callable(quantizer.quantize):
        raise PdxError(f"quantizer {quantizer.name!r} has no name, no types or no quantize function")
    return quantizer
