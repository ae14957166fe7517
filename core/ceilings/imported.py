"""Ceilings for runs another tool measured, by the same figures and math as
the runs pdx measures (:mod:`pdx.ceilings`).

The device is the catalog chip the file named (llama-bench's ``gpu_info`` or
``cpu_info``) or the one the user gave (``pdx import --hardware``); this
machine's probes never judge an import, since it ran elsewhere. Where the
device or the model's size is unknown, the run's ``ceiling_basis`` says so and
why, so no page mistakes an import for a run from before pdx had ceilings.

A tool that names its model in words (llama-bench's "gpt-oss 120B MXFP4 MoE")
gives no layer dims or experts. Where the words name a shape of pdx's model
catalog and the file's parameter count agrees with it, the shape's dims and
experts fill the model in, and the record says so: an imported MoE run is then
judged by the experts a token reads, as a run pdx measured, and KV bytes at depth
count too.
"""

from __future__ import annotations

from pdx import ceilings
from pdx.hardware import catalog
from pdx.models import expert_summary
from pdx.stats.results import derive_stats
from pdx.synth.shapes import find_shape

# A file's parameter count within this share of a shape's confirms that the name means that shape
# (quantisation leaves the count alone; a fine-tune with other dims or a mistyped name does not agree).
SHAPE_PARAMS_TOLERANCE = 0.1


def _none(reason: str) -> dict:
    return {"version": ceilings.CEILINGS_VERSION, "source": "none", "reason": reason, "imported": True}


def judge(record: dict, hardware: str | None = None) -> dict:
    """The record with its ceiling basis and every test's ceilings set. Its id stays the content id of
    what the file said: ceilings are pdx's judgement, and a catalog that learns a figure must not make
    the same file a new run on its next import."""
    chip_id = catalog.lookup(hardware).id if hardware else record["hardware"].get("catalog")
    model = with_catalog_shape(record["model"])
    tests = [t | {"ceilings": None} for t in record["tests"]]
    if not (model.get("n_params") and model.get("file_bytes")):
        basis = _none(f"the model's size and parameters are unknown ({record['origin']} did not record them); "
                      "give --model PATH to name the model file")
    elif chip_id is None:
        basis = _none(f"{record['origin']} named no device in pdx's hardware catalog "
                      f"({record['hardware'].get('name')}); give --hardware NAME (see `pdx hw list`)")
    else:
        settings = record["engine"].get("settings") or {}
        figures, basis = ceilings.resolve(record["hardware"], model, record.get("threads") or 1, chip_id)
        model_figures = ceilings.model_figures(model, (settings.get("type_k") or "f16", settings.get("type_v") or "f16"))
        basis |= ceilings.predictions(model_figures, figures) | {
            "imported": True, "device_from": "--hardware" if hardware else "the imported file"}
        for test in tests:
            if test["kind"] in ("pp", "tg", "pg") and test["status"] == "ok":
                test["ceilings"] = ceilings.test_ceilings(test, derive_stats(test), model_figures, figures,
                                                          settings.get("n_ubatch"))
    return record | {"model": model, "ceiling_basis": basis, "tests": tests}


def with_catalog_shape(model: dict) -> dict:
    """A model known only by its name, filled in from the catalog shape the name names (dims, sliding
    windows, experts), or as it was: a model that knows its own dims, no shape named, or a parameter
    count that disagrees with the shape's."""
    extra = model.get("extra") or {}
    if model.get("n_layers") or extra.get("experts"):
        return model
    words = " ".join(str(model.get(k) or "") for k in ("name", "path"))
    shape = find_shape(words)
    n_params, file_bytes = model.get("n_params") or 0, model.get("file_bytes") or 0
    if shape is None or not n_params or abs(n_params - shape.n_params) > SHAPE_PARAMS_TOLERANCE * shape.n_params:
        return model
    facts = {"catalog_shape": {
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
