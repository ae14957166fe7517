"""Ceilings for a benchmark run: which hardware figures apply, and every
test's bounds, binding ceiling and fraction reached, ready to store.

Which figures: ``--hardware NAME`` (a catalog entry, or ``probe``) if
given; else the catalog entry detection matched, when the engine runs on
that accelerator (a backend may say where with ``details["device"]``); else
the probes, at the run's thread count. The stored record says which,
with the numbers used, so a reader never has to guess.

Two ceilings, named: where a vendor's figures are used and a probe of the
device the engine computes on is cached, every test is judged against
both; the lower ceiling is the one shown (a probe measures what the
machine can use, a vendor's peak what it cannot exceed), its source named,
and the record keeps both under ``sources``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from pdx.contract.record import Ceilings
from pdx.contract.errors import PdxError
from pdx.domain.models import kvcache
from pdx.domain.hardware.catalog import Chip
from pdx.domain.ceilings.roofline import HardwareFigures, ModelFigures, knee_batch, phase, ridge_point

CEILINGS_VERSION = 1
PROBE = "probe"  # as a hardware name: judge by this machine's probes, whatever was detected


def compute_dtype(model_dtype: str) -> str:
    """The data type an engine multiplies a model of this weight type in."""
    d = (model_dtype or "").lower()
    if d in ("f32", "float32", "fp32"):
        return "fp32"
    if d in ("bf16", "bfloat16"):
        return "bf16"
    if "fp8" in d or "f8_" in d:
        return "fp8"
    if "fp4" in d:
        return "fp4"
    if d.startswith(("q", "iq", "tq", "int")):  # llama.cpp's quantised kernels use int8 dot products
        return "int8"
    return "fp16"


def model_figures(model: dict, kv_types: tuple[str, str] = ("f16", "f16")) -> ModelFigures:
    """From a model identity (``ModelInfo.to_dict()`` or a stored run's model) and the K/V cache types."""
    extra = model.get("extra") or {}
    table = float(model.get("n_vocab") or 0) * float(model.get("n_embd") or 0)
    try:
        kv = kvcache.dims_from_model(model, model.get("name") or "model")
    except PdxError:
        kv = None
    tied = bool(extra.get("tied_embeddings"))
    experts = extra.get("experts") or {}
    return ModelFigures(
        name=model.get("name") or "model",
        file_bytes=float(model["file_bytes"]),
        params=float(model["n_params"]),
        embedding_params=float(extra.get("embedding_params", table)),
        embedding_bytes_unread=0.0 if tied else float(extra.get("embedding_bytes", 0.0)),
        output_params=float(extra.get("output_params", table)),
        kv=kv,
        kv_element_bytes=sum(kvcache.element_bytes(t) for t in kv_types) / 2,
        expert_bytes=float(experts.get("expert_bytes") or 0.0),
        expert_active=experts.get("active_share"),
        expert_params=float(experts.get("expert_params") or 0.0),
        n_experts=int(experts.get("count") or 0),
        experts_used=int(experts.get("used") or 0),
    )


def chip_figures(chip: Chip, dtype: str) -> HardwareFigures:
    chosen = chip.flops_for(dtype)
    return HardwareFigures(
        bandwidth=chip.bandwidth, flops=chosen[1] if chosen else None, flops_dtype=chosen[0] if chosen else None,
        source="catalog", ref=chip.id, label=chip.name, memory_bytes=chip.memory_bytes,
        method=f"peak figures: {chip.origin}",
    )


def given_figures(chip: Chip | None, dtype: str, bandwidth: float | None = None,
                  flops: float | None = None) -> HardwareFigures:
    """A chip's figures for computing in ``dtype``, with any figure the user gave in its place: the one
    path by which ``pdx ceiling`` and ``pdx import`` judge a named chip, so both give one ceiling."""
    if chip is None and not (bandwidth or flops):
        raise PdxError("no hardware given", "give --hardware NAME (see `pdx hw list`) or --bandwidth and --flops")
    base = chip_figures(chip, dtype) if chip else HardwareFigures(None, None, None, "given", "command line",
                                                                 "figures given")
    if bandwidth:
        base = replace(base, bandwidth=bandwidth, source="given" if chip is None else base.source)
    if flops:
        base = replace(base, flops=flops, flops_dtype=dtype if chip is None else f"{dtype} (given)")
    return base


def basis_record(figures: HardwareFigures, dtype: str, **detail) -> dict:
    return {"version": CEILINGS_VERSION, **figures.to_dict(), "compute_dtype": dtype, **detail}


def facts(figures: HardwareFigures, model: ModelFigures, place=None, left_out: str | None = None) -> dict:
    """Where the figures come from, the data type the compute bound is for, where the weights live, and
    what the bound leaves out (KV reads of a model whose dims are unknown, host memory of unknown speed)."""
    origin = {"probe": "a probe of this machine", "given": "figures given on the command line"}.get(
        figures.source, figures.method.removeprefix("peak figures: ") if figures.method else figures.source)
    omitted = [left_out] if left_out else []
    if model.kv is None:
        omitted.append("KV reads not counted (the model's layers and KV heads are unknown)")
    return {"figures_from": origin, "kv_counted": model.kv is not None,
            "placement": place.to_dict() if place is not None else None, "left_out": omitted}


def predictions(model: ModelFigures, hw: HardwareFigures | None) -> dict:
    """The ridge point and the decode batch at which this model stops being memory-bound here
    (for MoE, with the expert coverage that batch reads, and the routing assumed)."""
    if hw is None:
        return {}
    knee = knee_batch(model, hw)
    out: dict[str, float | str | None] = {"ridge_point": ridge_point(hw), "knee_batch": knee}
    if model.is_moe:
        out["routing"] = model.routing
        if knee and model.n_experts:
            out["knee_experts_per_layer"] = model.experts_read(knee)
    return out


def _rate(stats: dict | None, key: str) -> float | None:
    return ((stats or {}).get(key) or {}).get("mean")


def speculative(decode: dict, spec: dict, bandwidth: float | None, draft_bytes: int | None) -> dict:
    """The decode phase of a speculating test (``spec``: :func:`pdx.domain.speculation.speculation_stats`):
    per output token, ``target_passes_per_token`` passes of the target model, each costing what one
    token costs at the single-token ceiling, and ``drafted_per_token`` passes of the draft model,
    each reading its weights once (``draft_bytes``; n-gram lookup drafts without a model, and a
    draft whose size is unknown is left out, and said)."""
    single = decode["ceiling"]
    seconds = spec["target_passes_per_token"] / single
    draft_read = draft_bytes / bandwidth if draft_bytes and bandwidth else None
    if draft_read:
        seconds += spec["drafted_per_token"] * draft_read
    return decode | {"ceiling": 1 / seconds, "speculative": {
        "single_token_ceiling": single, "target_passes_per_token": spec["target_passes_per_token"],
        "drafted_per_token": spec["drafted_per_token"], "draft_bytes": draft_bytes,
        "draft_counted": draft_read is not None}}


def verdict(measured: float | None, ceiling: float | None, what: str | None, caveat: str | None = None,
            speculative: bool = False) -> tuple[float | None, bool, str | None]:
    """A rate against its ceiling: the fraction of it reached, whether above it, and above it a warning
    naming the likely cause (``caveat``: why the figures may be low, such as a probe taken under load)."""
    fraction = measured / ceiling if measured and ceiling else None
    if not (fraction and fraction > 1.0):
        return fraction, False, None
    kind = ("speculative " if speculative else "") + (f"{what}-bound " if what else "")
    cause = (f"not a result; likely cause: {caveat}" if caveat
             else "a measurement error or wrong hardware figures, not a result")
    return fraction, True, f"measured {measured:.4g} t/s is above the {ceiling:.4g} t/s {kind}ceiling: {cause}"


def judge(entry: dict, measured: float | None, ceiling: float | None, what: str | None,
          caveat: str | None = None) -> None:
    """A phase's or a serving test's record judged in place (:func:`verdict`): measured, fraction,
    above_ceiling and, above it, the warning."""
    fraction, above, warning = verdict(measured, ceiling, what, caveat, bool(entry.get("speculative")))
    entry["measured"], entry["fraction"], entry["above_ceiling"] = measured, fraction, above
    if warning:
        entry["warning"] = warning


def not_a_measurement(record: Ceilings, why: str) -> Ceilings:
    """A test's ceilings where its figure cannot be a measurement (:func:`placement.unfit`): no ceiling nor
    fraction (a roofline of a run that could not happen judges nothing), the reason as the missing
    ceiling's, and as the warning every reader prints; ``unfit`` keeps its run out of headlines."""
    declined: Ceilings = {**record, "phases": {}, "ceiling": None, "bound": None, "fraction": None,
                          "above_ceiling": False, "missing": why, "warning": f"not a result: {why}", "unfit": why}
    return declined


def test_ceilings(test: Mapping[str, Any], stats: dict | None, model: ModelFigures, hw: HardwareFigures,
                  ubatch: int | None = None, draft_bytes: int | None = None) -> Ceilings:
    """One test's ceilings: each phase's bounds, the test's ceiling, and the fractions reached. A
    speculating test's decode ceiling counts its target passes and drafts (:func:`speculative`;
    ``draft_bytes``: the draft model's size, where it has one)."""
    n_p, n_g, depth, batch = test["n_prompt"], test["n_gen"], test["depth"], test["batch"]
    phases: dict[str, dict[str, Any]] = {}
    if n_p:
        phases["prefill"] = phase(model, hw, "prefill", n_p, depth, batch, ubatch).to_dict()
    if n_g:
        phases["decode"] = phase(model, hw, "decode", n_g, depth + n_p, batch).to_dict()
        spec = (stats or {}).get("speculation")
        if spec and phases["decode"]["ceiling"]:
            phases["decode"] = speculative(phases["decode"], spec, hw.bandwidth, draft_bytes)
    ceiling: float | None
    bound: str | None
    if len(phases) == 1:
        (only,) = phases.values()
        ceiling, bound = only["ceiling"], only["bound"]
    elif all(p["ceiling"] for p in phases.values()):
        times = {name: tokens / phases[name]["ceiling"] for name, tokens in (("prefill", n_p), ("decode", n_g))}
        ceiling = (n_p + n_g) / sum(times.values())
        bound = phases[max(times, key=lambda name: times[name])]["bound"]  # the phase that takes longer
    else:
        ceiling, bound = None, None
    speculating = "speculative" in phases.get("decode", {})
    measured = _rate(stats, "rate")
    fraction, above, warning = verdict(measured, ceiling, bound, hw.caveat, speculating)
    record: Ceilings = {"version": CEILINGS_VERSION, "source": hw.source, "ref": hw.ref, "bandwidth": hw.bandwidth,
                        "flops": hw.flops, "flops_dtype": hw.flops_dtype, "phases": phases, "ceiling": ceiling,
                        "bound": bound, "measured": measured, "fraction": fraction, "above_ceiling": above}
    if model.routing is not None:  # a mixture of experts
        record["routing"] = model.routing
    if speculating:
        record["speculative"] = True
    if not ceiling:
        record["missing"] = "; ".join(dict.fromkeys(p["missing"] for p in phases.values() if p.get("missing"))) or None
    if warning:
        record["warning"] = warning
    if len(phases) == 2:
        for name, key in (("prefill", "prompt_rate"), ("decode", "gen_rate")):
            judge(phases[name], _rate(stats, key), phases[name]["ceiling"], phases[name]["bound"], hw.caveat)
    return record


def judged(test: Mapping[str, Any], stats: dict | None, model: ModelFigures, sources: list[HardwareFigures],
           ubatch: int | None = None, draft_bytes: int | None = None) -> Ceilings:
    """One test judged against every set of figures: the lowest ceiling is the record's own
    (its ``source`` says whose), and ``sources`` keeps each judgement, so a rate above the
    probed ceiling is flagged even where the vendor's peak is higher."""
    records = [test_ceilings(test, stats, model, hw, ubatch, draft_bytes) for hw in sources]
    if len(records) == 1:
        return records[0]
    with_ceiling = [(ceiling, r) for r in records if (ceiling := r["ceiling"])]
    binding = min(with_ceiling, key=lambda found: found[0])[1] if with_ceiling else records[0]
    return binding | {"sources": {r["source"]: r for r in records}}
