"""Ceilings for runs another tool measured, by the same figures and math as
the runs pdx measures (:mod:`pdx.ceilings`).

The device is the catalog chip the file named (llama-bench's ``gpu_info`` or
``cpu_info``) or the one the user gave (``pdx import --hardware``); this
machine's probes never judge an import, since it ran elsewhere. Where the
device or the model's size is unknown, the run's ``ceiling_basis`` says so and
why, so no page mistakes an import for a run from before pdx had ceilings.
"""

from __future__ import annotations

from pdx import ceilings
from pdx.hardware import catalog
from pdx.stats.results import derive_stats


def _none(reason: str) -> dict:
    return {"version": ceilings.CEILINGS_VERSION, "source": "none", "reason": reason, "imported": True}


def judge(record: dict, hardware: str | None = None) -> dict:
    """The record with its ceiling basis and every test's ceilings set. Its id stays the content id of
    what the file said: ceilings are pdx's judgement, and a catalog that learns a figure must not make
    the same file a new run on its next import."""
    chip_id = catalog.lookup(hardware).id if hardware else record["hardware"].get("catalog")
    model = record["model"]
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
    return record | {"ceiling_basis": basis, "tests": tests}
