"""The napkin calculators behind ``pdx ceiling`` and ``pdx kv``: ceilings
and KV-cache sizes from a hardware name or figures and a model (a file, a
config.json, a named shape, or a size and parameter count), with no
benchmark run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pdx import ceilings, kvcache
from pdx.errors import PdxError
from pdx.hardware import catalog
from pdx.roofline import HardwareFigures, ModelFigures, knee_batch, phase, ridge_point
from pdx.units import parse_bandwidth, parse_bytes, parse_count, parse_flops

# Bytes per weight of the synthetic types, norms aside (llama.cpp blocks: 32 values + an f16 scale).
_WEIGHT_BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}


@dataclass
class ModelSpec:
    """What the user said about the model; any one way of naming it."""

    path: str | None = None
    config: str | None = None
    shape: str | None = None
    weight_type: str = "f16"
    model_bytes: str | None = None
    params: str | None = None
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
        from pdx.models import identify

        if spec.path.endswith(".json"):
            return kvcache.dims_from_config(spec.path)
        info = identify(spec.path)
        return kvcache.dims_from_model(info.to_dict(), info.path)
    if spec.shape:
        from pdx.synth import get_shape

        s = get_shape(spec.shape)
        return kvcache.make_dims(f"shape {s.name}", s.n_layers, s.n_kv_heads, s.head_dim, s.n_heads,
                                 n_ctx_train=s.n_ctx)
    raise PdxError("no model given", "give -m FILE, --config config.json, --shape NAME, or --n-layers, "
                                     "--n-kv-heads and --head-dim")


def model_figures(spec: ModelSpec, kv_type: str = "f16") -> tuple[ModelFigures, str]:
    """The model as the roofline sees it, and its weight data type."""
    element = kvcache.element_bytes(kv_type)
    if spec.path:
        from pdx.models import identify

        info = identify(spec.path).to_dict()
        figures = ceilings.model_figures(info, (kv_type, kv_type))
        if any(v is not None for v in spec.explicit_dims.values()):
            figures = replace(figures, kv=kv_dims(spec))
        return figures, info["dtype"]
    if spec.shape:
        return _shape_figures(spec, element), spec.weight_type
    if spec.model_bytes or spec.params:
        if not (spec.model_bytes and spec.params):
            raise PdxError("the napkin form needs both --model-bytes and --params", "e.g. --model-bytes 3.83GB --params 7B")
        kv = kv_dims(spec) if any(v is not None for v in spec.explicit_dims.values()) else None
        return ModelFigures(name="given model", file_bytes=parse_bytes(spec.model_bytes, "--model-bytes"),
                            params=parse_count(spec.params, "--params"), kv=kv, kv_element_bytes=element), "f16"
    raise PdxError("no model given", "give -m FILE, --shape NAME, or --model-bytes and --params")


def _shape_figures(spec: ModelSpec, element: float) -> ModelFigures:
    from pdx.synth import get_shape

    s = get_shape(spec.shape)
    per_weight = _WEIGHT_BYTES.get(spec.weight_type.lower())
    if per_weight is None:
        raise PdxError(f"--type {spec.weight_type}: use one of {', '.join(_WEIGHT_BYTES)}")
    norms = (2 * s.n_layers + 1) * s.n_embd  # float32 vectors
    table = s.n_vocab * s.n_embd
    return ModelFigures(
        name=f"shape {s.name} {spec.weight_type}", file_bytes=(s.n_params - norms) * per_weight + 4 * norms,
        params=s.n_params, embedding_params=table,
        embedding_bytes_unread=0.0 if s.tie_embeddings else table * per_weight, output_params=table,
        kv=kv_dims(ModelSpec(shape=spec.shape)), kv_element_bytes=element,
    )


def hardware_figures(name: str | None, bandwidth: str | None, flops: str | None, dtype: str) -> HardwareFigures:
    """A catalog chip, figures given on the command line, or a chip with some figures overridden."""
    if not (name or bandwidth or flops):
        raise PdxError("no hardware given", "give --hardware NAME (see `pdx hw list`) or --bandwidth and --flops")
    base = ceilings.chip_figures(catalog.lookup(name), dtype) if name else \
        HardwareFigures(None, None, None, "given", "command line", "figures given")
    if bandwidth:
        base = replace(base, bandwidth=parse_bandwidth(bandwidth), source="given" if not name else base.source)
    if flops:
        base = replace(base, flops=parse_flops(flops), flops_dtype=dtype if not name else f"{dtype} (given)")
    return base


def ceiling_report(hw: HardwareFigures, model: ModelFigures, n_prompt: int = 512, depth: int = 0, batch: int = 1,
                   ubatch: int = 512, measured: float | None = None, measured_pp: float | None = None) -> dict:
    """Decode and prefill ceilings, ridge point, knee batch and measured fractions."""
    if depth and model.kv is None:
        raise PdxError("a depth needs the model's KV dimensions",
                       "give --n-layers, --n-kv-heads and --head-dim, or a model file or shape")
    decode = phase(model, hw, "decode", 1, depth, batch).to_dict()
    prefill = phase(model, hw, "prefill", n_prompt, depth, batch, ubatch).to_dict()
    for entry, value in ((decode, measured), (prefill, measured_pp)):
        entry["measured"] = value
        entry["fraction"] = value / entry["ceiling"] if value and entry["ceiling"] else None
    report = {
        "hardware": hw.to_dict(),
        "model": {"name": model.name, "weight_bytes_per_step": model.step_bytes, "params": model.params,
                  "kv_bytes_per_token": model.kv_bytes_per_token if model.kv else None},
        "decode": decode,
        "prefill": prefill,
        "ridge_point": ridge_point(hw),
        "knee_batch": knee_batch(model, hw, depth),
    }
    if hw.memory_bytes and model.kv:
        report["fit"] = kvcache.fit(model.kv, model.kv_element_bytes, max(depth, 1), hw.memory_bytes, model.file_bytes)
    return report


def kv_calculation(spec: ModelSpec, kv_type: str, context: str | None, batch: int, memory: str | None,
                   hardware: str | None, weights: str | None) -> dict:
    """``pdx kv`` from its options: dims from the spec, memory from a size or a chip."""
    from pdx.workload import parse_int_list

    dims = kv_dims(spec)
    contexts = parse_int_list(context, "--context", minimum=1) if context else [dims.n_ctx_train or 4096]
    size = parse_bytes(memory, "--memory") if memory else catalog.lookup(hardware).memory_bytes if hardware else None
    if weights:
        weight_bytes = parse_bytes(weights, "--weights")
    elif spec.path and not spec.path.endswith(".json"):
        from pdx.models import identify

        weight_bytes = identify(spec.path).file_bytes
    else:
        weight_bytes = 0.0
    return kv_report(dims, kv_type, contexts, batch, size, weight_bytes)


def kv_report(dims: kvcache.KVDims, kv_type: str, contexts: list[int], batch: int = 1,
              memory: float | None = None, weights: float = 0.0) -> dict:
    element = kvcache.element_bytes(kv_type)
    per_token = dims.bytes_per_token(element)
    rows = [{"context": c, "bytes_per_sequence": per_token * c, "bytes_batch": per_token * c * batch,
             **({"fit": kvcache.fit(dims, element, c, memory, weights)} if memory else {})} for c in contexts]
    return {"dims": dims.to_dict(), "type": kv_type, "element_bytes": element, "bytes_per_token": per_token,
            "batch": batch, "contexts": rows}
