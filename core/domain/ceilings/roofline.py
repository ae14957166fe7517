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

A phase's ceiling is a bound that can bind it: decode's needs the memory
bound, prefill's the compute bound. When that bound is unknown the phase
has no ceiling (``missing`` says which figure would give it), even if the
other bound is known: a memory bound is no prefill ceiling.

Mixture-of-experts: a step reads the non-expert weights and the experts its
tokens route to. Under uniform routing, T tokens touch
``E * (1 - (1 - k/E)^T)`` distinct experts of a layer's E (k per token);
FLOPs per token use the active parameters (k of E experts).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from pdx.domain.models.kvcache import KVDims


@dataclass(frozen=True)
class ModelFigures:
    name: str
    file_bytes: float  # the weights as stored
    params: float | None  # None: unknown, so no compute bound
    embedding_params: float = 0.0  # token-embedding table: looked up, not multiplied
    embedding_bytes_unread: float = 0.0  # its bytes when untied (a step reads one row of it)
    output_params: float = 0.0  # the logits head
    kv: KVDims | None = None
    kv_element_bytes: float = 2.0
    # Mixture-of-experts (all zero for a dense model): routed experts' bytes and parameters in all
    # layers, experts per layer and experts each token routes to. n_experts 0 with expert_bytes set:
    # E and k unknown, only the active share (expert_active) is.
    expert_bytes: float = 0.0
    expert_params: float = 0.0
    n_experts: int = 0
    experts_used: int = 0
    expert_active: float | None = None  # the share of expert weights one token reads (k/E)

    @property
    def is_moe(self) -> bool:
        return bool(self.expert_bytes or self.expert_params)

    @property
    def active_share(self) -> float:
        """The share of the routed experts one token reads: k/E."""
        if self.expert_active is not None:
            return self.expert_active
        return self.experts_used / self.n_experts if self.n_experts else 1.0

    def expert_coverage(self, tokens: float) -> float:
        """The expected share of a layer's experts that ``tokens`` tokens route to (uniform routing);
        with E and k unknown, the fewest possible (every token routes alike), so the bound stays an
        upper bound."""
        if not self.is_moe:
            return 1.0
        if not self.n_experts:
            return self.active_share
        return 1.0 - (1.0 - self.active_share) ** max(1.0, tokens)

    def experts_read(self, tokens: float) -> float | None:
        """Distinct experts per layer a step of ``tokens`` tokens reads (None: dense, or E unknown)."""
        return self.n_experts * self.expert_coverage(tokens) if self.is_moe and self.n_experts else None

    @property
    def step_bytes(self) -> float:
        """Weight bytes one forward step of one token reads."""
        return self.weight_bytes(1)

    def weight_bytes(self, tokens: float) -> float:
        """Weight bytes one forward step over ``tokens`` tokens reads (the same for any count when dense)."""
        unread_experts = self.expert_bytes * (1.0 - self.expert_coverage(tokens)) if self.is_moe else 0.0
        return self.file_bytes - self.embedding_bytes_unread - unread_experts

    @property
    def active_params(self) -> float | None:
        if self.params is None:
            return None
        return self.params - self.expert_params * (1.0 - self.active_share) if self.is_moe else self.params

    @property
    def kv_bytes_per_token(self) -> float:
        return self.kv.bytes_per_token(self.kv_element_bytes) if self.kv else 0.0

    def kv_bytes_at(self, context: float) -> float:
        """One sequence's cache at ``context`` tokens (sliding-window layers hold their window)."""
        return self.kv.bytes_at(context, self.kv_element_bytes) if self.kv else 0.0

    @property
    def routing(self) -> str | None:
        """The routing assumption behind the expert bytes, as stored with a ceiling."""
        if not self.is_moe:
            return None
        if not self.n_experts:
            share = f"{self.active_params / self.params:.3g}" if self.params else "an unknown share"
            return (f"{share} of the weights read per token (active/total parameters, bytes in proportion); "
                    "experts per layer unknown, so a step of many tokens is assumed to read no more experts "
                    "than one token does (an upper bound on the rate)")
        return (f"uniform routing: {self.experts_used} of {self.n_experts} experts per token; T tokens in a step "
                f"read E*(1-(1-k/E)^T) distinct experts per layer")

    @property
    def attention_flops_per_context(self) -> float:
        """FLOPs one token spends per cached token it attends to (QK^T and PV)."""
        if not self.kv or not self.kv.n_heads:
            return 0.0
        return 4.0 * self.kv.n_layers * self.kv.n_heads * self.kv.head_dim

    def flops_per_token(self, phase: str, context: float, tokens_per_sequence: int = 1) -> float | None:
        if self.params is None:
            return None
        dense = self.active_params - self.embedding_params
        if phase == "prefill":  # logits only for each sequence's last prompt token
            dense -= self.output_params * (1 - 1 / max(1, tokens_per_sequence))
        attended = self.kv.tokens_attended(context) if self.kv else context
        return 2.0 * dense + self.attention_flops_per_context * attended


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
    # Why the figures may be low, said wherever a rate reads above them (a probe taken under load).
    caveat: str | None = None

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
    missing: str | None = None  # the figure a bound lacks, when one is unknown
    experts_per_layer: float | None = None  # MoE: distinct experts a step reads per layer

    def to_dict(self) -> dict:
        return asdict(self)


# The bound that can bind each phase: a ceiling is never offered from the other one alone.
BINDING = {"decode": "memory", "prefill": "compute"}


def _lower(kind: str, memory: float | None, compute: float | None) -> tuple[float | None, str | None]:
    """The ceiling, and which bound it is; with one bound unknown the phase's own bound (decode:
    memory, prefill: compute) still caps the rate, but which binds cannot be said; without it the
    phase has no ceiling."""
    if memory and compute:
        return min((memory, "memory"), (compute, "compute"))
    return (memory if BINDING[kind] == "memory" else compute), None


def missing_figures(model: ModelFigures, hw: HardwareFigures) -> dict[str, str]:
    """For each unknown bound, which figure is missing and how to give it."""
    missing = {}
    if not hw.bandwidth:
        missing["memory"] = "the memory bound needs a bandwidth: give --bandwidth, or a probe (--hardware probe)"
    needs = [what for what, absent in (("FLOP/s (give --flops, or a probe: --hardware probe)", not hw.flops),
                                       ("a parameter count (give --params)", model.params is None)) if absent]
    if needs:
        missing["compute"] = "the compute bound needs " + " and ".join(needs)
    return missing


def mean_context(depth: int, tokens: int) -> float:
    """The mean context of a phase's timed tokens: ``tokens`` new ones after ``depth`` cached."""
    return depth + (tokens + 1) / 2


def phase(model: ModelFigures, hw: HardwareFigures, kind: str, tokens: int, depth: int = 0, batch: int = 1,
          ubatch: int | None = None) -> Phase:
    """Both bounds of one phase: prefill ``tokens`` prompt tokens, or decode ``tokens`` steps."""
    context = mean_context(depth, tokens)
    kv_read = model.kv_bytes_at(context)  # one sequence's cache at the mean context
    if kind == "decode":
        step_tokens = batch
        bytes_per_token = (model.weight_bytes(batch) + batch * kv_read) / batch
        flops = model.flops_per_token("decode", context)
    else:
        step_tokens = min(ubatch or tokens * batch, tokens * batch)
        steps = math.ceil(tokens * batch / step_tokens)
        passes = math.ceil(tokens / min(tokens, step_tokens))  # steps each sequence's cache is read in
        bytes_per_token = (steps * model.weight_bytes(step_tokens) + batch * passes * kv_read) / (tokens * batch)
        flops = model.flops_per_token("prefill", context, tokens)
    memory = hw.bandwidth / bytes_per_token if hw.bandwidth else None
    compute = hw.flops / flops if hw.flops and flops else None
    ceiling, bound = _lower(kind, memory, compute)
    unknown = missing_figures(model, hw)
    missing = "; ".join(unknown[b] for b in ("memory", "compute") if b in unknown) or None
    return Phase(kind, tokens, depth, batch, context, bytes_per_token, flops, memory, compute, ceiling, bound,
                 missing, model.experts_read(step_tokens))


def ridge_point(hw: HardwareFigures) -> float | None:
    """FLOPs per byte at which compute and memory take equal time."""
    return hw.flops / hw.bandwidth if hw.flops and hw.bandwidth else None


def knee_batch(model: ModelFigures, hw: HardwareFigures, context: float = 0.0) -> float | None:
    """The decode batch at which the compute bound meets the memory bound.

    Per step: B tokens of FLOPs against weights + B caches of bytes, so
    B = (W / bw) / (f / F - kv / bw); None when the caches alone outgrow
    compute (decode then stays memory-bound at any batch). For MoE the
    weights a step reads grow with B (expert coverage), so B is found where
    the two step times meet.
    """
    flops = model.flops_per_token("decode", context)
    if not (hw.flops and hw.bandwidth and flops):
        return None
    per_token = flops / hw.flops - model.kv_bytes_at(context) / hw.bandwidth
    if per_token <= 0:
        return None
    if not (model.is_moe and model.n_experts):
        return (model.step_bytes / hw.bandwidth) / per_token

    def excess(b: float) -> float:  # compute time over memory time of one step of b tokens
        return b * per_token - model.weight_bytes(b) / hw.bandwidth

    low, high = 1.0, 2.0
    if excess(low) >= 0:
        return low
    while excess(high) < 0:
        low, high = high, high * 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if excess(mid) < 0 else (low, mid)
    return high
