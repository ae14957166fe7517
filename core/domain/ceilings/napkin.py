"""The napkin calculators behind ``pdx ceiling`` and ``pdx kv``: ceilings
and KV-cache sizes from a hardware name or figures and a model (a file, a
config.json, a named shape, or a size and parameter count), with no
benchmark run.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

from pdx.domain import ceilings

from pdx.domain.ceilings.imported import with_catalog_shape
from pdx.domain.ceilings.widths import weight_bytes_per_param
from pdx.domain.ceilings.roofline import HardwareFigures, ModelFigures, knee_batch, phase, ridge_point
from pdx.contract.errors import PdxError
from pdx.domain.hardware import catalog
from pdx.domain.models import identify, kvcache
from pdx.domain.synth import get_shape
from pdx.base.units import parse_bytes, parse_count
from pdx.domain.workload import parse_int_list



@dataclass
class ModelSpec:
    """What the user said about the model; any one way of naming it."""

    path: str | None = None
    config: str | None = None
    shape: str | None = None
    weight_type: str = "f16"
    model_bytes: str | None = None
    params: str | None = None
    active_params: str | None = None
    experts: int | None = None
    experts_used: int | None = None
    n_layers: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    n_heads: int | None = None
    n_embd: int | None = None

    @property
    def explicit_dims(self) -> dict:
        return {"n_layers": self.n_layers, "n_kv_heads": self.n_kv_heads, "head_dim": self.head_dim,
                "n_heads": self.n_heads, "n_embd": self.n_embd}


def kv_dims(spec: ModelSpec) -> kvcache.KVDims:
    """The KV dimensions from whichever source the user gave (explicit numbers win)."""
    if any(v is not None for v in spec.explicit_dims.values()):
        return kvcache.make_dims("given dimensions", **spec.explicit_dims)
    if spec.config:
        return kvcache.dims_from_config(spec.config)
    if spec.path:
        if spec.path.endswith(".json"):
            return kvcache.dims_from_config(spec.path)
        info = identify(spec.path)
        return kvcache.dims_from_model(info.to_dict(), info.path)
    if spec.shape:
        return get_shape(spec.shape).kv_dims()
    raise PdxError("no model given", "give -m FILE, --config config.json, --shape NAME, or --n-layers, "
                                     "--n-kv-heads and --head-dim")


def model_figures(spec: ModelSpec, kv_type: str = "f16") -> tuple[ModelFigures, str]:
    """The model as the roofline sees it, and its weight data type."""
    element = kvcache.element_bytes(kv_type)
    if spec.path:
        info = identify(spec.path).to_dict()
        figures = ceilings.model_figures(info, (kv_type, kv_type))
        if any(v is not None for v in spec.explicit_dims.values()):
            figures = replace(figures, kv=kv_dims(spec))
        return _with_experts(figures, spec), info["dtype"]
    if spec.shape and spec.model_bytes:
        sized = _sized_shape_figures(spec, spec.shape, spec.model_bytes, kv_type)
        return _with_experts(sized, spec), spec.weight_type
    if spec.shape:
        return _with_experts(_shape_figures(spec.shape, spec.weight_type, element), spec), spec.weight_type
    if spec.model_bytes or spec.params:
        if not spec.model_bytes:
            raise PdxError("the napkin form needs --model-bytes (the weights read per token)",
                           "e.g. --model-bytes 3.83GB, with --params 7B for the compute bound")
        kv = kv_dims(spec) if any(v is not None for v in spec.explicit_dims.values()) else None
        params = parse_count(spec.params, "--params") if spec.params else None
        figures = ModelFigures(name="given model", file_bytes=parse_bytes(spec.model_bytes, "--model-bytes"),
                               params=params, kv=kv, kv_element_bytes=element)
        return _with_experts(figures, spec), spec.weight_type  # --type says what the engine computes in
    raise PdxError("no model given", "give -m FILE, --shape NAME, or --model-bytes (and --params)")


def _with_experts(figures: ModelFigures, spec: ModelSpec) -> ModelFigures:
    """Apply --active-params, --experts and --experts-used over what the model says of itself."""
    if spec.active_params is None and spec.experts is None and spec.experts_used is None:
        return figures
    experts, used = spec.experts, spec.experts_used
    if (experts is None) != (used is None):
        raise PdxError("--experts and --experts-used go together", "e.g. --experts 128 --experts-used 4")
    if experts is not None and used is not None and used > experts:
        raise PdxError(f"--experts-used {used} is more than --experts {experts}")
    if spec.active_params is None:
        if not figures.is_moe:
            raise PdxError("--experts needs to know which weights are experts",
                           "give --active-params too, or a model file or shape with experts")
        assert experts is not None and used is not None, "one of the three was given, and these two go together"
        return replace(figures, n_experts=experts, experts_used=used, expert_active=None)
    if figures.params is None:
        raise PdxError("--active-params needs --params (the total)", "e.g. --params 117B --active-params 5.1B")
    active = parse_count(spec.active_params, "--active-params")
    if active > figures.params:
        raise PdxError(f"--active-params {spec.active_params} is more than the {figures.params:.4g} parameters")
    share = used / experts if experts and used is not None else 0.0
    # active = total - experts x (1 - k/E); with E and k unknown the inactive part is all there is to know.
    expert_params = (figures.params - active) / (1 - share) if share < 1 else 0.0
    expert_bytes = figures.file_bytes * expert_params / figures.params  # bytes in proportion to parameters
    return replace(figures, expert_params=expert_params, expert_bytes=expert_bytes, n_experts=experts or 0,
                   experts_used=used or 0, expert_active=share if experts else 0.0)


def _sized_shape_figures(spec: ModelSpec, shape_name: str, model_bytes: str, kv_type: str) -> ModelFigures:
    """A file's size (and parameter count) with a shape's dims: read as ``pdx import`` reads a model that
    a table names (:func:`pdx.domain.ceilings.imported.with_catalog_shape`), so both give one ceiling."""
    shape = get_shape(shape_name)
    params = parse_count(spec.params, "--params") if spec.params else shape.n_params
    model = {"name": shape.name, "n_params": params, "file_bytes": parse_bytes(model_bytes, "--model-bytes")}
    shaped = with_catalog_shape(model)
    if shaped is model:
        raise PdxError(f"--params {spec.params} is not the {shape.name} shape's {shape.n_params:.4g} parameters "
                       "(within 10%)", "leave out --shape, or give the shape's own count")
    return ceilings.model_figures(shaped, (kv_type, kv_type))


def _shape_figures(shape_name: str, weight_type: str, element: float) -> ModelFigures:
    """A named shape in one weight type (every matrix in ``--type``; norms float32)."""
    s = get_shape(shape_name)
    per_weight = weight_bytes_per_param(weight_type)
    matrix, vectors, experts, expert_params = 0, 0, 0.0, 0
    for role, _, dims in s.tensors():
        count = math.prod(dims)
        if len(dims) == 1:
            vectors += count
        else:
            matrix += count
        if s.is_expert(role):
            experts += count * per_weight
            expert_params += count
    table = s.n_vocab * s.n_embd
    return ModelFigures(
        name=f"shape {s.name} {weight_type}", file_bytes=matrix * per_weight + 4 * vectors,
        params=s.n_params, embedding_params=table,
        embedding_bytes_unread=0.0 if s.tie_embeddings else table * per_weight, output_params=table,
        kv=s.kv_dims(), kv_element_bytes=element, expert_bytes=experts, expert_params=expert_params,
        n_experts=s.n_experts, experts_used=s.n_experts_used,
    )


def speculation(accept_length: float | None, draft_tokens: float | None, draft: str | None) -> dict | None:
    """The napkin form of speculative decoding: ``accept_length`` tokens per pass of the target (its
    own token included), ``draft_tokens`` drafted per pass (default: every accepted one, the least
    drafting that length needs), ``draft``: the draft model, a file or a size (its weights read once
    per drafted token). None without an accept length."""
    if accept_length is None:
        if draft_tokens is not None or draft is not None:
            raise PdxError("--draft-tokens and --draft-model need --accept-length",
                           "give the mean tokens each pass of the target yields, e.g. --accept-length 2.5")
        return None
    if draft_tokens is not None and draft_tokens < accept_length - 1:
        raise PdxError(f"--draft-tokens {draft_tokens:g} is fewer than the {accept_length - 1:g} accepted drafts "
                       f"--accept-length {accept_length:g} needs", "draft at least accept length - 1 tokens a pass")
    drafted = accept_length - 1 if draft_tokens is None else draft_tokens
    draft_bytes = None
    if draft is not None:
        # A model file: its size as it lies on disk; else a size as given.
        draft_bytes = identify(draft).file_bytes if os.path.exists(draft) else parse_bytes(draft, "--draft-model")
    return {"accept_length": accept_length, "target_passes_per_token": 1 / accept_length,
            "drafted_per_token": drafted / accept_length, "draft_bytes": draft_bytes}


def ceiling_report(hw: HardwareFigures | list[HardwareFigures], model: ModelFigures, n_prompt: int = 512,
                   depth: int = 0, batch: int = 1, ubatch: int = 512, measured: float | None = None,
                   measured_pp: float | None = None, n_gen: int = 1, spec: dict | None = None) -> dict:
    """Decode and prefill ceilings, ridge point, knee batch and measured fractions; with several sets
    of figures, each phase's lowest ceiling is the one reported (its source named) and
    ``sources`` keeps every set's own report."""
    sources = hw if isinstance(hw, list) else [hw]
    reports = [_one_report(h, model, n_prompt, depth, batch, ubatch, measured, measured_pp, n_gen, spec)
               for h in sources]
    if len(reports) == 1:
        return reports[0]
    report = dict(reports[0])
    for name in ("decode", "prefill"):
        known = [r[name] | {"source": r["hardware"]["source"]} for r in reports if r[name]["ceiling"]]
        report[name] = min(known, key=lambda e: e["ceiling"]) if known else reports[0][name]
    report["sources"] = {r["hardware"]["source"]: r for r in reports}
    return report


def _one_report(hw: HardwareFigures, model: ModelFigures, n_prompt: int, depth: int, batch: int, ubatch: int,
                measured: float | None, measured_pp: float | None, n_gen: int = 1, spec: dict | None = None) -> dict:
    if depth and model.kv is None:
        raise PdxError("a depth needs the model's KV dimensions",
                       "give --n-layers, --n-kv-heads and --head-dim, or a model file or shape")
    decode = phase(model, hw, "decode", n_gen, depth, batch).to_dict()
    if spec and decode["ceiling"]:
        decode = ceilings.speculative(decode, spec, hw.bandwidth, spec["draft_bytes"])
    prefill = phase(model, hw, "prefill", n_prompt, depth, batch, ubatch).to_dict()
    for entry, value in ((decode, measured), (prefill, measured_pp)):
        ceilings.judge(entry, value, entry["ceiling"], entry["bound"])
    described = {"name": model.name, "weight_bytes_per_step": model.step_bytes, "params": model.params,
                 "kv_bytes_per_token": model.kv_bytes_per_token if model.kv else None}
    if model.is_moe:
        described |= {"active_params": model.active_params, "expert_bytes": model.expert_bytes,
                      "n_experts": model.n_experts or None, "experts_used": model.experts_used or None,
                      "routing": model.routing}
    if model.kv and model.kv.n_sliding_layers:
        described |= {"sliding_window": model.kv.sliding_window, "sliding_layers": model.kv.n_sliding_layers}
    knee = knee_batch(model, hw, depth)
    report = {
        "hardware": hw.to_dict(),
        "model": described,
        "decode": decode,
        "prefill": prefill,
        "ridge_point": ridge_point(hw),
        "knee_batch": knee,
    }
    if knee and model.is_moe and model.n_experts:
        report["knee_experts_per_layer"] = model.experts_read(knee)
    if hw.memory_bytes and model.kv:
        report["fit"] = kvcache.fit(model.kv, model.kv_element_bytes, max(depth, 1), hw.memory_bytes, model.file_bytes)
    return report


def kv_calculation(spec: ModelSpec, kv_type: str, context: str | None, batch: int, memory: str | None,
                   hardware: str | None, weights: str | None) -> dict:
    """``pdx kv`` from its options: dims from the spec, memory from a size or a chip."""
    dims = kv_dims(spec)
    contexts = parse_int_list(context, "--context", minimum=1) if context else [dims.n_ctx_train or 4096]
    size = parse_bytes(memory, "--memory") if memory else catalog.lookup(hardware).memory_bytes if hardware else None
    if weights:
        weight_bytes = parse_bytes(weights, "--weights")
    elif spec.path and not spec.path.endswith(".json"):
        weight_bytes = identify(spec.path).file_bytes
    else:
        weight_bytes = 0.0
    return kv_report(dims, kv_type, contexts, batch, size, weight_bytes)


def kv_report(dims: kvcache.KVDims, kv_type: str, contexts: list[int], batch: int = 1,
              memory: float | None = None, weights: float = 0.0) -> dict:
    element = kvcache.element_bytes(kv_type)
    per_token = dims.bytes_per_token(element)
    rows = [{"context": c, "bytes_per_sequence": dims.bytes_at(c, element),
             "bytes_batch": dims.bytes_at(c, element) * batch,
             **({"fit": kvcache.fit(dims, element, c, memory, weights)} if memory else {})} for c in contexts]
    return {"dims": dims.to_dict(), "type": kv_type, "element_bytes": element, "bytes_per_token": per_token,
            "batch": batch, "contexts": rows}
