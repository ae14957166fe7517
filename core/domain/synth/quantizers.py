"""GGUF types an engine's own tool writes (K-quants, IQ, MXFP4): plugins register their quantisers
(``pdx_register_quantizers``), and ``pdx model synth --type T`` writes f16 then hands the file to the
first one that makes T, so the bytes are the ones that tool writes for any user."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from pdx.contract.quantizer import Quantizer, check_quantizer  # noqa: F401 (plugins import them here)
from pdx.contract.errors import ModelError, PdxError


def write_quantized(write_f16: Callable[[Path], Path], dtype: str, path: Path, known: tuple[str, ...],
                    quantizers: tuple[Quantizer, ...]) -> Path:
    """``path`` in ``dtype``: an f16 file written by ``write_f16`` beside it, quantised by the first of
    ``quantizers`` (the plugins', :func:`pdx.base.plugin_manager.quantizers`) that makes that type, then
    removed. A type nobody makes is a one-line error naming what can be made."""
    quantizer = next((q for q in quantizers if dtype.upper() in q.types), None)
    if quantizer is None:
        made = sorted({t.lower() for q in quantizers for t in q.types} - set(known))
        raise ModelError(f"unknown GGUF type {dtype!r} for a synthetic model",
                         f"choose one of: {', '.join(known)}" + (f", or through a quantiser: {', '.join(made)}"
                                                                  if made else
                                                                  "; K-quants, IQ and MXFP4 need a quantiser plugin "
                                                                  "(pdx's llama.cpp plugin, with `pdx llamacpp "
                                                                 "install`)"))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    source = path.with_name(f".{path.name}.{os.getpid()}.f16.gguf")
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # a failed or stopped quantiser leaves no file
    try:
        write_f16(source)
        try:
            quantizer.quantize(source, partial, dtype.upper())
        except PdxError:
            raise
        except Exception as exc:  # a plugin's mistake, said in one line as its own
            raise PdxError(f"quantizer {quantizer.name} (plugin {quantizer.plugin or '?'}) failed: "
                           f"{type(exc).__name__}: {exc}", "report it to the plugin's author") from None
        os.replace(partial, path)
    finally:
        source.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)
    return path
