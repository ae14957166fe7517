"""Synthetic models: random weights of a real model's shape.

No weights can be downloaded on many benchmark machines, and speed does not
depend on weight values, so pdx writes its own models of a chosen shape.
"""

from pdx.synth.shapes import SHAPES, Shape, get_shape
from pdx.synth.gguf_writer import GGUF_TYPES, default_model_path, ensure_gguf, write_gguf

__all__ = ["SHAPES", "Shape", "get_shape", "GGUF_TYPES", "write_gguf", "ensure_gguf", "default_model_path"]
