"""Named model shapes: a tiny one for tests, small ones for quick benchmarks,
and the real dimensions of popular models (dense, mixture-of-experts and
sliding-window) so their true size can be measured and their ceilings
computed. Every shape is defined once, in pdx's model catalog
(``model_catalog.json``, with the config.json each dimension comes from).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from pdx.base.typed_values import dataclass_from
from pdx.contract.errors import ModelError
from pdx.domain.models import kvcache
from pdx.domain.synth.families import EXPERT_ROLES, family_of

CATALOG_PATH = Path(__file__).parent.parent / "model_catalog.json"


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
    head_dim_: int | None = None  # given when it differs from n_embd / n_heads (Qwen3, Gemma, gpt-oss)
    architecture: str = "llama"
    n_experts: int = 0  # routed experts per layer; 0: a dense feed-forward
    n_experts_used: int = 0  # experts each token routes to
    n_ff_expert: int = 0  # each expert's feed-forward width [default: n_ff]
    sliding_window: int = 0  # tokens a sliding-window layer attends to; 0: none
    sliding_pattern: int = 0  # every Nth layer attends to the whole context, the rest slide
    source: str = ""  # the published config.json its dimensions come from, or "pdx synthetic shape"
    aliases: tuple[str, ...] = ()  # other names it goes by, e.g. llama-bench's "qwen2 7B" for qwen2.5-7b

    def __post_init__(self) -> None:
        for key in ("n_embd", "n_layers", "n_heads", "n_kv_heads", "n_ff", "n_vocab", "n_ctx"):
            if getattr(self, key) < 1:
                raise ModelError(f"shape {self.name}: {key} must be positive, not {getattr(self, key)}")
        if self.head_dim_ is None and self.n_embd % self.n_heads:
            raise ModelError(f"shape {self.name}: n_embd {self.n_embd} is not a multiple of n_heads {self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise ModelError(f"shape {self.name}: n_heads {self.n_heads} is not a multiple of n_kv_heads "
                             f"{self.n_kv_heads}")
        if self.n_embd % 32 or self.n_ff % 32 or self.expert_ff % 32:
            raise ModelError(f"shape {self.name}: n_embd and n_ff must be multiples of 32 (quantisation blocks)")
        if self.n_vocab < 512:
            raise ModelError(f"shape {self.name}: n_vocab must be at least 512 (specials and byte tokens)")
        if self.n_experts and not 1 <= self.n_experts_used <= self.n_experts:
            raise ModelError(f"shape {self.name}: {self.n_experts_used} experts used of {self.n_experts}",
                             "each token routes to between 1 and n_experts experts")
        if self.family.experts is not None and self.is_moe != self.family.experts:
            raise ModelError(f"shape {self.name}: a {self.architecture} model "
                             f"{'routes to experts' if self.family.experts else 'has no experts'}",
                             f"give n_experts {'and n_experts_used' if self.family.experts else '0'}")

    @property
    def family(self):
        """How pdx writes this shape (:mod:`pdx.domain.synth.families`)."""
        return family_of(self.architecture)

    @property
    def head_dim(self) -> int:
        return self.head_dim_ or self.n_embd // self.n_heads

    @property
    def expert_ff(self) -> int:
        return self.n_ff_expert or self.n_ff

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def n_sliding_layers(self) -> int:
        if not (self.sliding_window and self.sliding_pattern):
            return 0
        return self.n_layers - self.n_layers // self.sliding_pattern

    def sliding(self, layer: int) -> bool:
        """Whether ``layer`` attends to a window (gpt-oss: even layers; Gemma 3: all but every 6th)."""
        return bool(self.sliding_window and self.sliding_pattern and (layer + 1) % self.sliding_pattern)

    @property
    def n_params(self) -> int:
        return sum(math.prod(dims) for _, _, dims in self.tensors())

    @property
    def expert_params(self) -> int:
        """Parameters of the routed experts, all layers."""
        return sum(math.prod(dims) for role, _, dims in self.tensors() if role in EXPERT_ROLES)

    @property
    def active_params(self) -> int:
        """Parameters one token multiplies through: all but the experts it does not route to."""
        if not self.is_moe:
            return self.n_params
        return self.n_params - self.expert_params * (self.n_experts - self.n_experts_used) // self.n_experts

    @staticmethod
    def is_expert(role: str) -> bool:
        return role in EXPERT_ROLES

    def tensors(self) -> list[tuple[str, int | None, tuple[int, ...]]]:
        """Every weight in file order: (role, layer or None, dims), each layer's as its family has them
        (:mod:`pdx.domain.synth.families`: llama's, Gemma 3's extra norms, gpt-oss's biases and sinks). Matrices
        are (rows, cols), stacked experts (experts, rows, cols), as GGUF stores them; each file format
        names the roles its own way."""
        d, vocab, roles = self.n_embd, self.n_vocab, self.family.layer(self)
        layers = [(role, i, dims) for i in range(self.n_layers) for role, dims in roles]
        output = [] if self.tie_embeddings else [("output", None, (vocab, d))]
        return [("embed", None, (vocab, d)), *layers, ("norm", None, (d,)), *output]

    def kv_dims(self):
        """The KV-cache dimensions of this shape (sliding-window layers included)."""
        return kvcache.make_dims(f"shape {self.name}", self.n_layers, self.n_kv_heads, self.head_dim, self.n_heads,
                                 n_ctx_train=self.n_ctx, sliding_window=self.sliding_window or None,
                                 n_sliding_layers=self.n_sliding_layers)

    def with_dims(self, **dims: int | None) -> "Shape":
        changed = {k: v for k, v in dims.items() if v is not None}
        if not changed:
            return self
        return dataclass_from(Shape, asdict(self) | changed | {"name": f"{self.name}-custom"},
                              f"shape {self.name}", ModelError)

    def to_dict(self) -> dict:
        data = {k: v for k, v in asdict(self).items() if k != "head_dim_"}
        return data | {"head_dim": self.head_dim, "n_params": self.n_params, "active_params": self.active_params}


def _shape(entry: dict[str, object]) -> Shape:
    """A catalog entry's shape: its fields are Shape's, but head_dim for head_dim_ (each value's type checked)."""
    if "head_dim_" in entry:
        raise ModelError(f"model catalog: {entry.get('name')}: unknown fields head_dim_", "give head_dim")
    values = {"head_dim_" if k == "head_dim" else k: v for k, v in entry.items()}
    return dataclass_from(Shape, values, f"model catalog: {entry.get('name')}", ModelError)


@functools.lru_cache(maxsize=1)
def catalog() -> dict:
    return json.loads(CATALOG_PATH.read_text())


SHAPES: dict[str, Shape] = {s.name: s for s in map(_shape, catalog()["models"])}

DEFAULT_SHAPE = "100m"


def _words(text: str) -> list[str]:
    import re

    # "moe" is dropped: llama-bench names qwen3moe models "qwen3moe 30B.A3B".
    return [w for w in re.findall(r"[a-z]+|\d+(?:\.\d+)?", text.lower()) if w != "moe"]


def find_shape(text: str, n_params: int | None = None) -> Shape | None:
    """The catalog shape a free-form model name names, e.g. llama-bench's "gpt-oss 120B MXFP4 MoE"
    or a file name "Qwen3-30B-A3B-Q4_K_M.gguf"; None when no real shape's every word is in it, by its
    name or one of its aliases (llama-bench's "qwen2 7B" names qwen2.5-7b). Given the file's parameter
    count, the matching shape whose count is nearest wins ("llama 70B": Llama 2 or 3.x 70B); otherwise,
    or on a tie, the longest name that matched, so "llama 3.1 8B" is not "llama 3 8B"."""
    words = _words(text)
    found = []
    for shape in SHAPES.values():
        if shape.source.startswith("pdx"):
            continue
        matched = max((len(name) for name in map(_words, (shape.name, *shape.aliases)) if _contains(words, name)),
                      default=0)
        if matched:
            found.append((shape, matched))
    if not found:
        return None
    nearest = (lambda f: (-abs(f[0].n_params - n_params), f[1])) if n_params else (lambda f: f[1])
    return max(found, key=nearest)[0]


def shape_by_count(architecture: str, n_params: float, tolerance: float = 0.03) -> Shape | None:
    """The real shape of this architecture (llama.cpp's name: "qwen2", "gpt-oss") whose parameter count is
    nearest ``n_params``, within ``tolerance``: for a model named only "qwen2 ?B" (a size llama.cpp could not
    label). A count is weaker evidence than a name, so the tolerance is tighter than a name's."""
    close = [s for s in SHAPES.values() if not s.source.startswith("pdx") and s.architecture == architecture.lower()
             and abs(s.n_params - n_params) <= tolerance * s.n_params]
    return min(close, key=lambda s: abs(s.n_params - n_params), default=None)


def _contains(words: list[str], wanted: list[str]) -> bool:
    """Whether ``wanted`` appears in ``words`` in order and contiguously."""
    n = len(wanted)
    return any(words[i:i + n] == wanted for i in range(len(words) - n + 1))


def get_shape(name: str) -> Shape:
    try:
        return SHAPES[name.lower()]
    except KeyError:
        raise ModelError(f"unknown shape {name!r}", f"choose one of: {', '.join(SHAPES)}") from None
