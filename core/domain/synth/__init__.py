"""Synthetic models: random weights of a real model's shape.

No weights can be downloaded on many benchmark machines, and speed does not
depend on weight values, so pdx writes its own models of a chosen shape, as
GGUF (llama.cpp) or in Hugging Face layout (vLLM, MLX).
"""

from pdx.domain.synth.shapes import SHAPES, Shape, get_shape
from pdx.domain.synth.gguf_writer import GGUF_TYPES, default_model_path, ensure_gguf, write_gguf
from pdx.domain.synth.hf_writer import HF_TYPES, default_hf_path, ensure_hf, write_hf

__all__ = ["SHAPES", "Shape", "get_shape", "GGUF_TYPES", "write_gguf", "ensure_gguf", "default_model_path",
           "HF_TYPES", "write_hf", "ensure_hf", "default_hf_path"]
