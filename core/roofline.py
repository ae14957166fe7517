"""Ceilings: the fastest a phase can go on given hardware, from two bounds.

- memory bound (t/s) = bandwidth / bytes read per token. A forward step
  reads the weights once (shared by every token the step processes: the
  sequences of a batch, the prompt tokens of a prefill ubatch) plus each
  sequence's KV cache at its context.
- compute bound (t/s) = FLOP/s / FLOPs per token, where FLOPs per token =
  2 x the parameters the token multiplies through (the token-embedding table
  is a lookup; prefill computes logits for each sequence's last token only)
  + attention, 4 x layers x heads x head dim x context.

The lower bound is the ceiling and names the phase "memory-bound" or
"compute-bound"; nothing here assumes which. Context is the mean over the
timed tokens (depth + (n + 1) / 2). With only a file size and a parameter
count (the napkin form) the weights read are the file and FLOPs 2 x params.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from pdx.kvcache import KVDims


@dataclass(frozen=True)
class ModelFigures:
    name: str
    file_bytes: float  # the weights as stored
    params: float
    embedding_params: float = 0.0  # token-embedding table: looked up, not multiplied
    embedding_bytes_unread: float = 0.0  # its bytes when untied (a step reads one row of it)
    output_params: float = 0.0  # the logits head
    kv: KVDims | None = None
    kv_element_bytes: float = 2.0

    @property
    def step_bytes(self) -> float:
        """Weight bytes one forward step reads."""
        return self.file_bytes - self.embedding_bytes_unread

    @property
    def kv_bytes_per_token(self) -> float:
        return self.kv.bytes_per_token(self.kv_element_bytes) if self.kv else 0.0

    @property
    def attention_flops_per_context(self) -> float:
        """FLOPs one token spends per cached token it attends to (QK^T and PV)."""
        if not self.kv or not self.kv.n_heads:
            return 0.0
        return 4.0 * self.kv.n_layers * self.kv.n_heads * self.kv.head_dim

    def flops_per_token(self, phase: str, context: float, tokens_per_sequence: int = 1) -> float:
        dense = self.params - self.embedding_params
        if phase == "prefill":  # logits only for each sequence's last prompt token
            dense -= self.output_params * (1 - 1 / max(1, tokens_per_sequence))
        return 2.0 * dense + self.attention_flops_per_context * context


@dataclass(frozen=True)
class HardwareFigures:
    bandwidth: float | None  # bytes/s
    flops: float | None  # FLOP/s in the data type the engine computes in
    flops_dtype: str | None
    source: str  # "catalog", "probe" or "given"
    ref: str  # catalog id, probe cache file or "command line"
    label: str
    memory_bytes: float | None = None
    method: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Phase:
    phase: str  # "prefill" or "decode"
    tokens: int  # per sequence
    depth: int
    batch: int
    context: float  # mean context of the timed tokens
    bytes_per_token: float
    flops_per_token: float
    memory_bound: float | None  # t/s, all sequences together
    compute_bound: float | None
    ceiling: float | None
    bound: str | None  # "memory" or "compute"; None when one of the bounds is unknown

    def to_dict(self) -> dict:
        return asdict(self)


def _lower(memory: float | None, compute: float | None) -> tuple[float | None, str | None]:
    """The ceiling, and which bound it is; with one bound unknown the known one still caps the
    rate, but which binds cannot be said."""
    if memory and compute:
        return min((memory, "memory"), (compute, "compute"))
    return memory or compute, None


def phase(model: ModelFigures, hw: HardwareFigures, kind: str, tokens: int, depth: int = 0, batch: int = 1,
          ubatch: int | None = None) -> Phase:
    """Both bounds of one phase: prefill ``tokens`` prompt tokens, or decode ``tokens`` steps."""
    context = depth + (tokens + 1) / 2
    kv_read = model.kv_bytes_per_token * context  # one sequence's cache at the mean context
    if kind == "decode":
        bytes_per_token = (model.step_bytes + batch * kv_read) / batch
        flops = model.flops_per_token("decode", context)
    else:
        step_tokens = min(ubatch or tokens * batch, tokens * batch)
        steps = math.ceil(tokens * batch / step_tokens)
        passes = math.ceil(tokens / min(tokens, step_tokens))  # steps each sequence's cache is read in
        bytes_per_token = (steps * model.step_bytes + batch * passes * kv_read) / (tokens * batch)
        flops = model.flops_per_token("prefill", context, tokens)
    memory = hw.bandwidth / bytes_per_token if hw.bandwidth else None
    compute = hw.flops / flops if hw.flops else None
    ceiling, bound = _lower(memory, compute)
    return Phase(kind, tokens, depth, batch, context, bytes_per_token, flops, memory, compute, ceiling, bound)


def ridge_point(hw: HardwareFigures) -> float | None:
    """FLOPs per byte at which compute and memory take equal time."""
    return hw.flops / hw.bandwidth if hw.flops and hw.bandwidth else None


def knee_batch(model: ModelFigures, hw: HardwareFigures, context: float = 0.0) -> float | None:
    """The decode batch at which the compute bound meets the memory bound.

    Per step: B tokens of FLOPs against weights + B caches of bytes, so
    B = (W / bw) / (f / F - kv / bw); None when the caches alone outgrow
    compute (decode then stays memory-bound at any batch).
    """
    if not (hw.flops and hw.bandwidth):
        return None
    per_token = model.flops_per_token("decode", context) / hw.flops - model.kv_bytes_per_token * context / hw.bandwidth
    return (model.step_bytes / hw.bandwidth) / per_token if per_token > 0 else None
