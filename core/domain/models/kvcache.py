"""KV-cache sizes: bytes per token = 2 (K and V) x KV heads x head dim x
layers x bytes per element; then per context, per batch, and the batch that
fits in the memory the weights leave. Sliding-window layers (gpt-oss,
Gemma) hold at most their window, so past it only the full-attention layers
grow with the context.

Dimensions come from a model file, a Hugging Face config.json, a named shape
or explicit numbers; a model that lacks one of them is a one-line error.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from pdx.contract.errors import ModelError, PdxError
from pdx.contract.numbers import MAX_TOKENS, parse_int

# Bytes per cached element; llama.cpp's block types carry a scale per 32 values.
ELEMENT_BYTES = {
    "f32": 4.0, "fp32": 4.0, "f16": 2.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0,
    "q8_0": 34 / 32, "q5_1": 24 / 32, "q5_0": 22 / 32, "q4_1": 20 / 32, "q4_0": 18 / 32, "iq4_nl": 18 / 32,
}


def element_bytes(dtype: str) -> float:
    try:
        return ELEMENT_BYTES[dtype.lower()]
    except KeyError:
        raise PdxError(f"unknown KV-cache type {dtype!r}", f"use one of {', '.join(ELEMENT_BYTES)}") from None


@dataclass(frozen=True)
class KVDims:
    n_layers: int
    n_kv_heads: int
    head_dim: int
    source: str  # where the numbers came from
    n_heads: int | None = None
    n_ctx_train: int | None = None
    sliding_window: int | None = None  # tokens a sliding-window layer keeps
    n_sliding_layers: int = 0  # layers with a sliding window; the rest attend to the whole context

    def bytes_per_token(self, element: float = 2.0) -> float:
        """Every layer's K and V for one token (below any window, each token costs this)."""
        return 2 * self.n_kv_heads * self.head_dim * self.n_layers * element

    def bytes_at(self, context: float, element: float = 2.0) -> float:
        """One sequence's cache at ``context`` tokens, sliding-window layers capped at their window."""
        per_layer = 2 * self.n_kv_heads * self.head_dim * element
        sliding = self.n_sliding_layers if self.sliding_window else 0
        return per_layer * ((self.n_layers - sliding) * context + sliding * min(context, self.sliding_window or 0))

    def tokens_attended(self, context: float) -> float:
        """Cached tokens one token attends to, summed over layers and divided by the layer count."""
        sliding = self.n_sliding_layers if self.sliding_window else 0
        return ((self.n_layers - sliding) * context + sliding * min(context, self.sliding_window or 0)) / self.n_layers

    def to_dict(self) -> dict:
        return asdict(self)


def make_dims(source: str, n_layers, n_kv_heads, head_dim=None, n_heads=None, n_embd=None,
              n_ctx_train=None, sliding_window=None, n_sliding_layers=0) -> KVDims:
    """Checked dims; head_dim may come from n_embd / n_heads."""
    if not head_dim and n_embd and n_heads:
        head_dim = n_embd // n_heads
    missing = [name for name, value in (("layers", n_layers), ("KV heads", n_kv_heads), ("head dim", head_dim))
               if not value]
    if missing:
        raise ModelError(f"{source}: the model's {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing",
                         "give --n-layers, --n-kv-heads and --head-dim (or --n-embd and --n-heads)")
    def whole(name: str, value, minimum: int = 1) -> int:  # 2.5 layers or 1e400 are no shape: refused, never truncated
        return parse_int(value, f"{source}: {name}", minimum, MAX_TOKENS)

    layers = whole("layers", n_layers)
    window = whole("sliding window", sliding_window) if sliding_window else None
    sliding = whole("sliding-window layers", n_sliding_layers or 0, 0) if window else 0
    if sliding > layers:
        raise ModelError(f"{source}: {sliding} sliding-window layers of {layers}")
    return KVDims(layers, whole("KV heads", n_kv_heads), whole("head dim", head_dim), source,
                  whole("heads", n_heads) if n_heads else None,
                  whole("trained context", n_ctx_train) if n_ctx_train else None,
                  window if sliding else None, sliding)


def dims_from_model(model: dict, source: str) -> KVDims:
    """From a model's identity (``ModelInfo.to_dict()`` or a stored run's model)."""
    extra = model.get("extra") or {}
    return make_dims(source, model.get("n_layers"), model.get("n_kv_heads"), model.get("head_dim"),
                     model.get("n_heads"), model.get("n_embd"), model.get("n_ctx_train"),
                     extra.get("sliding_window"), extra.get("sliding_layers", 0))


def dims_from_config(path: str | Path) -> KVDims:
    """From a Hugging Face config.json (a text model's, or a multimodal one's text_config)."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "config.json"
    try:
        config = json.loads(p.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise ModelError(f"cannot read {p}: {exc}") from None
    if isinstance(config, dict) and isinstance(config.get("text_config"), dict):
        config = config["text_config"]
    if not isinstance(config, dict):
        raise ModelError(f"cannot read {p}: a config.json is a JSON object, not a {type(config).__name__}")
    heads = config.get("num_attention_heads")
    window, sliding = config_sliding_layers(config)
    return make_dims(str(p), config.get("num_hidden_layers"), config.get("num_key_value_heads", heads),
                     config.get("head_dim"), heads, config.get("hidden_size"),
                     config.get("max_position_embeddings"), window, sliding)


def config_sliding_layers(config: dict) -> tuple[int | None, int]:
    """(window, sliding-window layers) of a Hugging Face config: from ``layer_types`` (gpt-oss, newer
    Gemma), ``sliding_window_pattern`` (Gemma 3: every Nth layer global), or a window on every layer
    (Mistral); Qwen's ``use_sliding_window: false`` and Mixtral's null window mean none."""
    window = config.get("sliding_window")
    layers = config.get("num_hidden_layers")
    layers = layers if isinstance(layers, int) and not isinstance(layers, bool) else 0  # make_dims judges it
    if not isinstance(window, int) or isinstance(window, bool) or window < 1 or \
            config.get("use_sliding_window") is False:
        return None, 0
    types = config.get("layer_types")
    if isinstance(types, list):
        return window, sum(t == "sliding_attention" for t in types)
    pattern = config.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 0:
        return window, layers - layers // pattern
    return window, layers


def kv_bytes(dims: KVDims, element: float, context: int, batch: int = 1) -> float:
    return dims.bytes_at(context, element) * batch


def fit(dims: KVDims, element: float, context: int, memory: float, weights: float = 0.0) -> dict:
    """What fits in ``memory`` after ``weights``: sequences at ``context``, tokens in all."""
    left = memory - weights
    per_sequence = dims.bytes_at(context, element)
    per_token = per_sequence / context  # at this context: sliding-window layers spread over it
    return {
        "memory_bytes": memory,
        "weights_bytes": weights,
        "left_bytes": left,
        "max_batch": max(0, math.floor(left / per_sequence)) if left > 0 else 0,
        "max_tokens": max(0, math.floor(left / per_token)) if left > 0 else 0,
    }
