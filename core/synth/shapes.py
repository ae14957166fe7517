"""Named model shapes: a tiny one for tests, small ones for quick benchmarks,
and the real dimensions of popular models so their true size can be measured."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from pdx.errors import ModelError


@dataclass(frozen=True)
class Shape:
    name: str
    n_embd: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    n_ff: int
    n_vocab: int
    n_ctx: int = 4096
    tie_embeddings: bool = False
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        for key in ("n_embd", "n_layers", "n_heads", "n_kv_heads", "n_ff", "n_vocab", "n_ctx"):
            if getattr(self, key) < 1:
                raise ModelError(f"shape {self.name}: {key} must be positive, not {getattr(self, key)}")
        if self.n_embd % self.n_heads:
            raise ModelError(f"shape {self.name}: n_embd {self.n_embd} is not a multiple of n_heads {self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise ModelError(f"shape {self.name}: n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
        if self.n_embd % 32 or self.n_ff % 32:
            raise ModelError(f"shape {self.name}: n_embd and n_ff must be multiples of 32 (quantisation blocks)")
        if self.n_vocab < 512:
            raise ModelError(f"shape {self.name}: n_vocab must be at least 512 (specials and byte tokens)")

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_heads

    @property
    def n_params(self) -> int:
        return sum(math.prod(dims) for _, _, dims in self.tensors())

    def tensors(self) -> list[tuple[str, int | None, tuple[int, ...]]]:
        """Every weight of the llama architecture in file order: (role, layer or None, (rows, cols)).
        Each file format names the roles its own way (gguf_writer, hf_writer)."""
        d, kv, ff, vocab = self.n_embd, self.n_kv_heads * self.head_dim, self.n_ff, self.n_vocab
        per_layer = (("attn_norm", (d,)), ("q", (d, d)), ("k", (kv, d)), ("v", (kv, d)), ("o", (d, d)),
                     ("ffn_norm", (d,)), ("gate", (ff, d)), ("up", (ff, d)), ("down", (d, ff)))
        layers = [(role, i, dims) for i in range(self.n_layers) for role, dims in per_layer]
        output = [] if self.tie_embeddings else [("output", None, (vocab, d))]
        return [("embed", None, (vocab, d)), *layers, ("norm", None, (d,)), *output]

    def with_dims(self, **dims: int) -> "Shape":
        changed = {k: v for k, v in dims.items() if v is not None}
        if not changed:
            return self
        return replace(self, name=f"{self.name}-custom", **changed)

    def to_dict(self) -> dict:
        return asdict(self) | {"head_dim": self.head_dim, "n_params": self.n_params}


SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        # Small enough that a whole test benchmark takes seconds.
        Shape("tiny", n_embd=128, n_layers=2, n_heads=4, n_kv_heads=2, n_ff=256, n_vocab=1024, n_ctx=8192),
        # The default: about 106M parameters, real llama proportions.
        Shape("100m", n_embd=768, n_layers=8, n_heads=12, n_kv_heads=12, n_ff=2048, n_vocab=32000),
        # About 207M parameters (the size of ENGINES.md's reference measurements).
        Shape("200m", n_embd=1024, n_layers=11, n_heads=16, n_kv_heads=16, n_ff=2816, n_vocab=32000),
        Shape("llama-3.2-1b", n_embd=2048, n_layers=16, n_heads=32, n_kv_heads=8, n_ff=8192,
              n_vocab=128256, n_ctx=131072, tie_embeddings=True, rope_theta=500000.0),
        Shape("llama-2-7b", n_embd=4096, n_layers=32, n_heads=32, n_kv_heads=32, n_ff=11008, n_vocab=32000),
        Shape("llama-3-8b", n_embd=4096, n_layers=32, n_heads=32, n_kv_heads=8, n_ff=14336,
              n_vocab=128256, n_ctx=8192, rope_theta=500000.0),
        Shape("llama-2-13b", n_embd=5120, n_layers=40, n_heads=40, n_kv_heads=40, n_ff=13824, n_vocab=32000),
    )
}

DEFAULT_SHAPE = "100m"


def get_shape(name: str) -> Shape:
    try:
        return SHAPES[name.lower()]
    except KeyError:
        raise ModelError(f"unknown shape {name!r}", f"choose one of: {', '.join(SHAPES)}") from None
