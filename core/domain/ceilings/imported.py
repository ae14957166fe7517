"""Ceilings for runs another tool measured, by the same figures and math as
the runs pdx measures (:mod:`pdx.domain.ceilings`).

The device is the chip the file named (llama-bench's ``gpu_info`` or
``cpu_info``, or the words around a pasted table), or what the user gave
(:class:`Given`: ``--hardware``, ``--bandwidth``/``--flops``,
``--host-bandwidth``); the figures come through
:func:`pdx.domain.ceilings.given_figures`, the one path ``pdx ceiling`` takes too.
This machine's probes never judge an import, since it ran elsewhere. Where the
device or the model's size is unknown, the run's ``ceiling_basis`` says so and
why, so no page mistakes an import for a run from before pdx had ceilings.

A tool that names its model in words (llama-bench's "gpt-oss 120B MXFP4 MoE")
gives no layer dims or experts. Where the words name a shape of pdx's model
catalog and the file's parameter count agrees with it, the shape's dims and
experts fill the model in, and the record says so: an imported MoE run is then
judged by the experts a token reads, as a run pdx measured, and KV bytes at depth
count too. Where no shape fits, the words may still say what a token reads
(:mod:`pdx.domain.models.words`: "30B.A3B"), and the ceiling says KV reads are not
counted; a MoE whose words say nothing of it gets no ceiling rather than a
dense one. Where the weights live (-ngl, --n-cpu-moe, -ot, several GPUs) is
:mod:`pdx.domain.ceilings.placement`'s.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace

from pdx.contract.errors import PdxError
from pdx.domain import ceilings
from pdx.domain.ceilings import placement
from pdx.domain.ceilings.basis import model_of, run_basis
from pdx.domain.ceilings import kernels
from pdx.domain.ceilings.widths import weight_bytes_per_param
from pdx.domain.ceilings.roofline import HardwareFigures, ModelFigures, phase
from pdx.domain.hardware import catalog
from pdx.domain.models import expert_summary
from pdx.domain.ceilings import hub_names
from pdx.domain.models import words as words_
from pdx.domain.stats.derived import derive_stats
from pdx.base.units import parse_bandwidth, parse_flops
from pdx.domain.synth.shapes import find_shape, get_shape, shape_by_count

# A file's parameter count within this share of a shape's confirms that the name means that shape
# (quantisation leaves the count alone; a fine-tune with other dims or a mistyped name does not agree).
SHAPE_PARAMS_TOLERANCE = 0.1
_DEVICES = re.compile(r"^\s*(\d{1,3})\s*[x×]\s*(.+)$", re.I)  # --hardware "2x RTX 3090"
_MEMORY = re.compile(r"^(.+?)[\s,(]+(\d{1,4})\s*GB\)?\s*$", re.I)  # --hardware "M1 8GB": a Mac's memory


def _none(reason: str) -> dict:
    return {"version": ceilings.CEILINGS_VERSION, "source": "none", "reason": reason, "imported": True}


def _chip(record: dict, hardware: str | None):
    if hardware:
        return catalog.lookup(hardware)
    found = record["hardware"].get("catalog")
    return catalog.get(found) if found else None


@dataclass(frozen=True)
class Given:
    """What the user said of the machine an imported file ran on. ``bandwidth`` and ``flops`` (bytes/s,
    FLOP/s) stand in for the chip's figures or give one pdx lacks (a CPU); ``host_bandwidth`` is the host
    memory's, for a model split between a GPU and the host."""

    hardware: str | None = None
    bandwidth: float | None = None
    flops: float | None = None
    host_bandwidth: float | None = None
    devices: int | None = None  # "6x RTX 3090": how many of the chip ran the model
    memory: float | None = None  # bytes; "M1 8GB": the memory of a SoC sold in several sizes

    @classmethod
    def parse(cls, hardware: str | None = None, bandwidth: str | None = None, flops: str | None = None,
              host_bandwidth: str | None = None) -> "Given":
        """From the command line's words; an unknown chip or a malformed rate is a one-line error."""
        devices = None
        if hardware and (several := _DEVICES.match(hardware)):
            devices, hardware = int(several[1]), several[2]
        memory = None
        if hardware and catalog.find(hardware) is None and (sized := _MEMORY.match(hardware)):
            hardware, memory = _configured(sized[1], int(sized[2]))
        if hardware:
            catalog.lookup(hardware)
        return cls(hardware, parse_bandwidth(bandwidth) if bandwidth else None,
                   parse_flops(flops) if flops else None,
                   parse_bandwidth(host_bandwidth, "--host-bandwidth") if host_bandwidth else None, devices,
                   memory)

    @property
    def any(self) -> bool:
        return bool(self.hardware or self.bandwidth or self.flops or self.host_bandwidth)

    def configured(self, figures: HardwareFigures) -> HardwareFigures:
        """The chip's figures for the machine named: its memory where the name gives it ("M1 8GB")."""
        if not self.memory:
            return figures
        gb = f"{self.memory / placement.GIB:.0f} GB"
        return replace(figures, memory_bytes=self.memory, label=f"{figures.label}, {gb}")


def _configured(name: str, gb: int) -> tuple[str, float | None]:
    """A SoC named with its memory ("M1 8GB": Apple sells the M1 with 8 or 16) as (chip name, bytes); a
    name that is not such a SoC stays whole (its lookup then says it is unknown)."""
    chip = catalog.find(name)
    if chip is None or chip.kind != "soc":
        return f"{name} {gb}GB", None
    most = chip.memory_bytes
    if most and gb * placement.GIB > most * 1.01:
        raise PdxError(f"hardware '{name} {gb}GB': {chip.name} comes with at most {most / placement.GIB:.0f} GB",
                       "give the machine's memory, or the chip's name alone")
    return name, gb * placement.GIB


def judge(record: dict, given: Given | str | None = None) -> dict:
    """The record with its ceiling basis and every test's ceilings set. Its id stays the content id of
    what the file said: ceilings are pdx's judgement, and a catalog that learns a figure must not make
    the same file a new run on its next import."""
    given = given if isinstance(given, Given) else Given(given)
    hardware, bandwidth, flops, host_bandwidth = given.hardware, given.bandwidth, given.flops, given.host_bandwidth
    chip = _chip(record, hardware)
    words = model_words(record["model"])
    by_name = sized_by_name(record["model"], (record.get("provenance") or {}).get("model_named"))
    model = described(sized_by_bytes(by_name, words), words)
    tests = [t | {"ceilings": None} for t in record["tests"]]
    settings = _settings(record)
    if not (model.get("n_params") and model.get("file_bytes")):
        basis = _none(f"the model's size and parameters are unknown ({record['origin']} did not record them); "
                      "give --model PATH to name the model file")
    elif words and words.moe and not (model.get("extra") or {}).get("experts"):
        basis = _none(f"the model routes to experts ({words.architecture} {words.size}) but its name does not say "
                      "how many parameters a token uses, so any decode ceiling would be wrong; give --model PATH")
    elif chip is None and not (bandwidth or flops):
        said = record.get("provenance") or {}
        several, unknown = said.get("chips_named"), said.get("chips_unknown")
        named = f"the text names several: {', '.join(several)}" if several else \
            f"the text names {', '.join(repr(u) for u in unknown)}, no chip pdx knows as written" if unknown else \
            f"{record['origin']} named no device pdx knows ({record['hardware'].get('name')})"
        basis = _none(f"chip unknown: {named}; give --hardware NAME (see `pdx hw list`) or --bandwidth and --flops")
    else:
        engine = record.get("engine") or {}
        weight, notes = words.weight_type if words else model.get("dtype", ""), []
        if weight == "?" and words:
            weight, said = _weight_by_width(model, words)
            notes += [said] if said else []
        dtype, dtype_note = kernels.kernel_dtype(ceilings.compute_dtype(weight), chip,
                                                 (engine.get("details") or {}).get("backends"), engine.get("version"))
        figures = ceilings.given_figures(chip, dtype, bandwidth, flops)
        backends = str((engine.get("details") or {}).get("backends") or "").lower()
        shader = kernels.vulkan_shader_bound(dtype, chip, _vulkan_device(record, chip)) \
            if "vulkan" in backends and not flops else None
        if shader:
            dtype, shader_flops, dtype_note = shader
            figures = replace(figures, flops=shader_flops, flops_dtype=f"{dtype} (shader ALUs)")
        figures = given.configured(figures)
        tp = placement._int(settings.get("tensor_parallel_size")
                            or ((record.get("provenance") or {}).get("tensor_parallel") or {}).get("size")) or 0
        devices = given.devices or tp or sum(1 for g in record["hardware"].get("gpus") or ()
                                             if chip and g.get("catalog") == chip.id)
        figures, several = placement.across_devices(figures, devices,
                                                    "tensor" if tp > 1 else settings.get("split_mode"))
        model_figures = model_of(model, settings)
        if _flag(settings.get("no_kv_offload")) and model_figures.kv:
            model_figures = replace(model_figures, kv=None)
            notes.append("KV cache in host memory (-nkvo): its reads are not counted at the device (an upper bound)")
        place = placement.from_settings(settings, model.get("n_layers"))
        unified = chip is not None and chip.kind == "soc"
        rpc = "rpc" in str((engine.get("details") or {}).get("backends") or "").lower()
        if rpc:  # a build with RPC says so whether or not a remote node took layers
            notes.append("RPC backend: layers split over networked nodes (how many, the table does not say) run "
                         "one node after another, so one device's figures bound both phases; network transfers "
                         "are not counted, nor is a model too big for one node placed in host memory")
        else:
            figures, note = placement.spilled(figures, model_figures, place, host_bandwidth, unified)
            notes += [note] if note else []
        placed, left_out = placement.placed(figures, model_figures, place, host_bandwidth, unified)
        about = {"imported": True, "device_from": "--hardware" if hardware else "the imported file",
                 "devices": max(devices, 1), **({"devices_note": several} if several else {}),
                 **({"compute_dtype_note": dtype_note} if dtype_note else {})}
        run = run_basis(model_figures, settings, [placed], ceilings.basis_record(placed, dtype, **(
            {"chip": chip.figures()} if chip else {})), place, left_out, about)
        basis = run.record
        basis["left_out"] = [*(basis.get("left_out") or []), *notes]
        vendor = chip.vendor if chip else None
        for test in tests:
            if test["kind"] in ("pp", "tg", "pg") and test["status"] == "ok":
                test["ceilings"] = run.judge(test, derive_stats(test))
                if test["ceilings"] and (why := placement.unfit(model_figures, placed, vendor, test)):
                    test["ceilings"] = ceilings.not_a_measurement(test["ceilings"], why)
            elif test["kind"] == "serve" and test["status"] == "ok":
                test["ceilings"] = serve_ceiling(test, model_figures, placed)
    return record | {"model": model, "ceiling_basis": basis, "tests": tests}


def _weight_by_width(model: dict, words: words_.ModelWords) -> tuple[str, str | None]:
    """A file whose type llama.cpp only guessed ("all F32 (guessed)": the GGUF names none): its bits per
    weight say whether it is a quantised file (llama.cpp multiplies those with int8 dot products) or floats."""
    n_params, file_bytes = model.get("n_params") or 0, model.get("file_bytes") or 0
    if not (n_params and file_bytes):
        return "?", None
    bits = file_bytes * 8 / n_params
    weight = "f32" if bits > 24 else "f16" if bits > 12 else "quantised"
    return weight, (f"the model's type {words.file_type!r} is llama.cpp's guess (the file names none); its size "
                    f"makes {bits:.2f} bits per weight, so it is taken for a {weight} file")


def _vulkan_device(record: dict, chip) -> dict | None:
    """What ggml-vulkan's log said of the device the run was judged on (the one whose name is the chip's,
    else the first listed), None where the import kept no such line."""
    devices = (record.get("provenance") or {}).get("vulkan_devices") or []
    mine = [d for d in devices if chip is not None and catalog.find(str(d.get("name") or "")) == chip]
    return (mine or devices or [None])[0]


def concurrency(test: dict) -> int:
    """The requests a serving test had in flight at most: its cap, else (every request sent at once, no
    rate) all of them, else one per client."""
    spec = test.get("spec") or {}
    cap = spec.get("concurrency") or spec.get("max_concurrency")
    if cap:
        return int(cap)
    if str(spec.get("rate")).lower() in ("none", "inf") and spec.get("n_requests"):
        return int(spec["n_requests"])
    return max(1, int(test.get("batch") or 1))


def serve_ceiling(test: dict, model: ModelFigures, hw: HardwareFigures) -> dict:
    """A serving test's decode ceiling: the aggregate output rate of ``concurrency`` sequences decoding at
    once at their mean context (prompt plus half the output), against which the output throughput is
    judged (its duration holds prefill too, so the fraction is a lower bound of decode's)."""
    batch = concurrency(test)
    decode = phase(model, hw, "decode", max(1, test["n_gen"] or 1), test["n_prompt"] or 0, batch).to_dict()
    record = {"version": ceilings.CEILINGS_VERSION, "source": hw.source, "ref": hw.ref, "bandwidth": hw.bandwidth,
              "flops": hw.flops, "flops_dtype": hw.flops_dtype, "phases": {"decode": decode},
              "ceiling": decode["ceiling"], "bound": decode["bound"], "concurrency": batch,
              "measured": "output token throughput"}
    if not record["ceiling"]:
        record["missing"] = decode.get("missing")
    measured = (derive_stats(test) or {}).get("output_throughput")
    ceilings.judge(record, measured, record["ceiling"], record["bound"], hw.caveat)
    return record


def _flag(value) -> bool:
    """A llama-bench on/off setting (1, "1", True, "on")."""
    return str(value).strip().lower() in ("1", "true", "on", "yes")


def _settings(record: dict) -> dict:
    """The run's engine settings, with what a tool kept per test (llama-bench's n_cpu_moe, -ot) beside them."""
    first = (record["tests"][0].get("engine") or {}) if record["tests"] else {}
    extra = {k: first[k] for k in ("n_cpu_moe", "tensor_buft_overrides", "split_mode", "ot", "no_kv_offload",
                                   "tensor_split") if k in first}
    return extra | {k: v for k, v in (record["engine"].get("settings") or {}).items() if v is not None}


def model_words(model: dict) -> words_.ModelWords | None:
    """The model's name as llama-bench printed it, read (None for a model named otherwise)."""
    extra = model.get("extra") or {}
    if not isinstance(extra.get("model_type"), str):
        return None
    return words_.parse(extra["model_type"], model.get("n_params") or None)


def sized_by_name(model: dict, named_elsewhere: dict | None = None) -> dict:
    """A model a serving tool named by its hub id and nothing else (no size, no parameter count): the
    catalog shape its name names, at the width its name says (:mod:`pdx.domain.ceilings.hub_names`), said so.
    ``named_elsewhere``: the name the file gave outside the model (mlx_lm.benchmark's command line)."""
    sized = _sized_by_name(model, named_elsewhere)
    if named_elsewhere and sized is not model:
        # the record's model is only what the tool printed ("?"): two pastes sized from different names must
        # not claim one model (the registry refuses one sha256 with two sizes), so the name joins its identity
        key = hashlib.sha256(f"{model.get('sha256')}|{named_elsewhere.get('name')}".encode()).hexdigest()
        sized = sized | {"id": key, "sha256": key}
        if model.get("path") in (None, "", "?"):  # the tool printed no name: the one it ran is the model's
            sized["name"] = str(named_elsewhere.get("name") or "").removeprefix("./")
    return sized


def _sized_by_name(model: dict, named_elsewhere: dict | None) -> dict:
    if model.get("n_params") or model.get("file_bytes"):
        return model
    text = (named_elsewhere or {}).get("name") or " ".join(str(model.get(k) or "") for k in ("path", "name"))
    named = hub_names.read(text)
    if named is None:
        # vLLM's result names the model twice (a served name and the hub id): each is one name, tried alone
        names = [text] if named_elsewhere else [str(model.get(k) or "") for k in ("path", "name")]
        for name in names:
            if (sized := by_named_size(model, name)) is not model:
                return sized
        return model
    extra = model.get("extra") or {}
    sized = {"shape": named.shape.name, "bits_per_weight": named.bits, "said": named.said,
             "assumed": "the shape's parameters at that width for every weight (scales and 16-bit embeddings "
                        "left out: fewer bytes than the file, so the ceiling stays an upper bound)"}
    dtype = model.get("dtype") if model.get("dtype") not in (None, "", "?") else named.dtype
    return model | {"n_params": named.shape.n_params, "file_bytes": named.file_bytes, "dtype": dtype,
                    "extra": extra | {"sized_by_name": sized}}


def by_named_size(model: dict, text: str) -> dict:
    """A hub name of no catalog shape that gives its size ("Qwen3-Next-80B-A3B-Thinking-4bit": 80B total,
    3B active, 4 bits): its parameters and bytes, and a MoE's active share, without dims (KV not counted)."""
    # a hub id only ("mlx-community/...-80B-A3B-4bit"): llama.cpp's size labels are rounded classes ("qwen2 1B"
    # for a 0.5B model), too loose to bound anything
    sized = hub_names.sized(text) if text.strip() and not any(c.isspace() for c in text.strip()) else None
    if sized is None:
        return model
    total, active, bits, named_dtype, said = sized
    extra = model.get("extra") or {}
    dtype = model.get("dtype") if model.get("dtype") not in (None, "", "?") else named_dtype  # as sized_by_name's
    out = model | {"n_params": round(total), "file_bytes": round(total * bits / 8), "dtype": dtype,
                   "extra": extra | {"sized_by_name": {"said": said, "bits_per_weight": bits, "assumed":
                                     "the name's parameters at its width (no dims: KV reads not counted)"}}}
    if active:
        words = words_.ModelWords("?", f"{total / 1e9:g}B.A{active / 1e9:g}B", "", True, active, basis=said)
        out = with_named_experts(out, words)
    return out


def sized_by_bytes(model: dict, words: words_.ModelWords | None) -> dict:
    """A table that gives the file's size but no parameter count (a summary people make of several runs): the
    count its bytes make at its type's bits per weight serves only to find the catalog shape it is, whose own
    count is then taken. A mix's extra bits make that estimate high, and a high count a low compute ceiling,
    so with no shape found the count stays unknown."""
    if model.get("n_params") or not model.get("file_bytes") or words is None:
        return model
    try:
        per_param = weight_bytes_per_param(words.weight_type)
    except PdxError:
        return model
    estimate = round(model["file_bytes"] / per_param)
    shape = ((with_catalog_shape(model | {"n_params": estimate}).get("extra") or {}).get("catalog_shape") or {})
    if not shape:
        return model
    counted = get_shape(shape["name"]).n_params
    extra = model.get("extra") or {}
    said = {"estimate": estimate, "weight_type": words.weight_type, "shape": shape["name"],
            "assumed": f"the file's bytes at {per_param * 8:g} bits per weight ({words.weight_type}) make "
                       f"{estimate / 1e9:.3g} B parameters, the catalog shape {shape['name']}'s count taken"}
    return with_catalog_shape(model | {"n_params": counted, "extra": extra | {"sized_by_bytes": said}})


def described(model: dict, words: words_.ModelWords | None) -> dict:
    """The model with what its catalog shape, else its own words, say of its dims and experts."""
    shaped = with_catalog_shape(model, by_count=words is not None and words.size.startswith("?"))
    if shaped is not model or not words or not words.moe:
        return shaped
    return with_named_experts(model, words)


def with_named_experts(model: dict, words: words_.ModelWords) -> dict:
    """A MoE known by its words: the active parameters they give (or k of E experts), the bytes a token
    reads in proportion to the parameters. Where the words give only E and k, every weight is taken for an
    expert: fewer bytes read than the truth, so the ceiling stays an upper bound."""
    extra = model.get("extra") or {}
    total, file_bytes = model.get("n_params") or 0, model.get("file_bytes") or 0
    if not (total and file_bytes):
        return model
    if words.active_params:
        active = min(words.active_params, total)
        experts = expert_summary(count=0, used=0, shared=0, total_params=total, total_bytes=file_bytes,
                                 expert_params=round(total - active),
                                 expert_bytes=round(file_bytes * (total - active) / total))
        experts |= {"active_share": 0.0, "active_params": round(active)}
    elif words.n_experts and words.experts_used:
        experts = expert_summary(count=words.n_experts, used=words.experts_used, shared=0, total_params=total,
                                 total_bytes=file_bytes, expert_params=total, expert_bytes=file_bytes)
    else:
        return model
    named = {"words": f"{words.architecture} {words.size}", "basis": words.basis,
             "assumed": "bytes read in proportion to the active parameters; KV reads not counted (dims unknown)"}
    return model | {"extra": extra | {"experts": experts, "named_experts": named}}


def with_catalog_shape(model: dict, by_count: bool = False) -> dict:
    """A model known only by its name, filled in from the catalog shape the name names (dims, sliding
    windows, experts), or as it was: a model that knows its own dims, no shape named, or a parameter
    count that disagrees with the shape's. ``by_count``: a name without a size (llama.cpp's "qwen2 ?B")
    may mean the shape of its architecture whose parameter count is the file's."""
    extra = model.get("extra") or {}
    if model.get("n_layers") or extra.get("experts"):
        return model
    words = " ".join(str(v or "") for v in (model.get("name"), model.get("path"), extra.get("model_type")))
    n_params, file_bytes = model.get("n_params") or 0, model.get("file_bytes") or 0
    shape = find_shape(words, n_params or None)
    agrees = (shape is not None and n_params
              and abs(n_params - shape.n_params) <= SHAPE_PARAMS_TOLERANCE * shape.n_params)
    if not agrees and n_params and model.get("architecture") and by_count:
        shape = shape_by_count(model["architecture"], n_params)
        agrees = shape is not None
    elif not agrees and n_params and model.get("architecture") and shape is not None:
        # "llama 7B" with 46.7 B parameters is no Llama 7B: llama.cpp labels Mixtral 8x7B by its expert's size,
        # so a MoE of the architecture whose count is the file's, and several times the name's, is meant
        counted = shape_by_count(model["architecture"], n_params)
        if counted is not None and counted.is_moe and counted.n_params > 2 * shape.n_params:
            shape, agrees = counted, True
    if shape is None or not agrees:  # agreeing, it is not None
        return model
    facts: dict[str, object] = {"catalog_shape": {
        "name": shape.name, "source": shape.source, "matched": words.strip(),
        "assumed": "the catalog shape's dims and experts; each part's bytes in proportion to its parameters"
                   if shape.is_moe else "the catalog shape's dims"}}
    table = shape.n_vocab * shape.n_embd  # the embedding rows: one is read per token, not the table
    facts |= {"tied_embeddings": shape.tie_embeddings, "embedding_params": table,
              "embedding_bytes": round(file_bytes * table / n_params)}
    if shape.n_sliding_layers:
        facts |= {"sliding_window": shape.sliding_window, "sliding_layers": shape.n_sliding_layers}
    if shape.is_moe and file_bytes:
        scale = n_params / shape.n_params  # the file's own count, split as the shape splits it
        expert_params = round(shape.expert_params * scale)
        facts["experts"] = expert_summary(
            count=shape.n_experts, used=shape.n_experts_used, shared=0, total_params=n_params,
            total_bytes=file_bytes, expert_params=expert_params,
            expert_bytes=round(file_bytes * expert_params / n_params))
    dims = {"n_layers": shape.n_layers, "n_heads": shape.n_heads, "n_kv_heads": shape.n_kv_heads,
            "head_dim": shape.head_dim, "n_embd": shape.n_embd, "n_ff": shape.n_ff, "n_vocab": shape.n_vocab,
            "n_ctx_train": shape.n_ctx}
    return model | dims | {"extra": extra | facts}
