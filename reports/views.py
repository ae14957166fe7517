"""What a page shows of one run: its tests as table rows, its samples, its manifest.

Plain data for the templates; numbers stay numbers (templates format them)
and each table cell that sorts carries its raw value.
"""

from __future__ import annotations

from pdx.reports import figures
from pdx.domain import headline, placement
from pdx.domain.ceilings import described, overhead
from pdx.domain.engine_version import engine_text
from pdx.domain.models.words import quant_label
from pdx.reports.manifest import model_hash_text, repetitions_text, workload_text
from pdx.reports.labels import fmt_rate, hardware_label, human_bytes, human_count
from pdx.reports.rows import PHASES, Row, run_rows
from pdx.reports.urls import web_url
from pdx.reports.sample_compare import sample_rates
from pdx.base.units import si_parts


def _bar(row: Row, scale: float) -> dict:
    """Widths (%) of the measured bar and the ceiling mark in a table cell."""
    if (rate := row.measured) is None or scale <= 0:
        return {"width": 0, "ceiling": None}
    return {"width": round(100 * rate / scale, 1),
            "ceiling": round(100 * row.ceiling.rate / scale, 1) if row.ceiling else None}


def test_table(run: dict) -> list[dict]:
    rows = run_rows(run)
    scale = {p: max([m for r in rows if r.phase == p and (m := r.measured) is not None]
                    + [r.ceiling.rate for r in rows if r.ceiling and r.phase == p], default=0) for p in PHASES}
    return [{"row": r, "bar": _bar(r, scale[r.phase])} for r in rows]


def has_batches(run: dict) -> bool:
    return any(t["batch"] > 1 for t in run["tests"])


def has_energy(run: dict) -> bool:
    return any(r.j_per_token is not None for r in run_rows(run))


def has_ceilings(runs: list[dict]) -> bool:
    return any(r.ceiling for run in runs for r in run_rows(run))


def sample_lines(run: dict) -> list[dict]:
    """Each test's repetitions in order, as rates and times: one line a test (the JSON has every field)."""
    out = []
    for test in run["tests"]:
        samples = test.get("samples") or []
        times = [s["ns"] for s in samples]
        stats = test.get("stats") or {}
        tokens = stats.get("tokens")
        out.append({"test": test["name"], "n": len(samples),
                    "tokens": f"{tokens:,}" if isinstance(tokens, int) else "",
                    "cv": stats.get("cv") if figures.layout(test) == "rates" else None,
                    "rates": " · ".join(fmt_rate(r) for r in sample_rates(test)),
                    "ms": " · ".join(f"{ns / 1e6:.2f}" for ns in times)})
    return out


def samples_summary(lines: list[dict]) -> str:
    """What the raw samples hold, as :func:`sample_lines` gives them: "5 repetitions of 2 tests"."""
    counts = [line["n"] for line in lines]
    return repetitions_text(counts) if any(counts) else "none: the file gave the tool's own figures"


def figures_of(run: dict) -> figures.Shown:
    """What a run shows besides its pp/tg table, as pdx.reports.figures describes it: the serving table, the
    latency distributions, each test's notes and those across tests, the conditions of each test."""
    return figures.shown(run)


def row_notes(run: dict) -> dict[str, list[tuple[str, bool]]]:
    """Beside each pp/tg test's row: adaptive stop, noise, what the machine did meanwhile, outliers,
    the engine's own rates; (words, whether they speak against the result), by test name."""
    found = ((test["name"], figures.row_notes(test)) for test in run["tests"] if figures.layout(test) == "rates")
    return {name: notes for name, notes in found if notes}


def serving_cards(run: dict) -> list[dict]:
    return figures.serving_headlines(run)


def serving_matrix(runs: list[dict]) -> dict | None:
    """Serving tests down (each figure of :data:`pdx.reports.figures.SIDE_BY_SIDE` a line), runs across; the
    best of each line marked. None where fewer than two runs have serving tests."""
    per_run = [{t["name"]: t for t in run["tests"] if figures.layout(t) == "serving" and t.get("stats")}
               for run in runs]
    if sum(1 for tests in per_run if tests) < 2:
        return None
    names = list(dict.fromkeys(name for tests in per_run for name in tests))
    reasons = [headline.left_out(run) for run in runs]
    lines = []
    for name in names:
        for figure in figures.SIDE_BY_SIDE:
            values = [figure.value(tests[name]["stats"]) if name in tests else None for tests in per_run]
            if not any(isinstance(v, (int, float)) for v in values):
                continue
            # A run left out (pdx.domain.headline.left_out: above a ceiling, unable to fit, noisy, overloaded) is
            # never the best.
            numbers = [v for v, why in zip(values, reasons) if isinstance(v, (int, float)) and not why]
            best = (max if figure.better == "higher" else min)(numbers) if figure.better and len(numbers) > 1 else None
            cells = [{"text": figure.text(tests[name]["stats"]) if name in tests else "—", "value": v,
                      "best": v is not None and v == best} for tests, v in zip(per_run, values)]
            lines.append({"test": name, "label": figure.label, "unit": figure.unit, "about": figure.about,
                          "cells": cells})
    return {"runs": runs, "lines": lines, "left_out": reasons, "note": headline.left_out_note(reasons)}


def manifest(run: dict) -> list[tuple[str, str]]:
    env, hw, model, engine = run["environment"], run["hardware"], run["model"], run["engine"]
    cpu = hw.get("cpu") or {}
    settings = ", ".join(f"{k}={v}" for k, v in sorted((engine.get("settings") or {}).items()))
    items = [
        ("run", run["id"]),
        ("status", run["status"] + (f" ({run['error']})" if run.get("error") else "")),
        ("created", run["created_at"] or "—"),
        ("finished", run.get("finished_at") or "—"),
        ("backend", placement.backend_label(run)),
        ("engine", engine_text(engine)),
        ("engine settings", settings or "—"),
        ("threads", str(run.get("threads") or "—")),
        ("model", f"{model['name']} ({model['architecture']}, {human_count(model['n_params'])} parameters, "
                  f"{quant_label(model)}, {human_bytes(model['file_bytes'])})"),
        ("model sha256", model_hash_text(model)),
        ("hardware", f"{hardware_label(run)} ({cpu.get('physical_cores') or '?'} cores, "
                     f"{cpu.get('logical_cores') or '?'} threads, {human_bytes(cpu.get('memory_bytes'))})"),
        ("system", f"{env.get('platform') or '?'}, Python {env.get('python') or '?'}, pdx {run['pdx_version']}"),
        ("workload", workload_text(run) + (f"; {added}" if (added := figures.lengthened_text(run)) else "")),
        ("command", run.get("command") or "—"),
        ("tags", ", ".join(run["tags"]) or "—"),
    ]
    return items


def hardware_figures(run: dict) -> list[dict]:
    """The figures a run's ceilings were judged against, each with where it came from."""
    basis = run.get("ceiling_basis") or {}
    if not basis:
        return []
    if basis.get("source") == "none":
        return [{"name": "ceilings", "value": "none", "unit": None, "url": None,
                 "source": basis.get("reason") or "no hardware figures"}]
    chip = basis.get("chip") or {}
    origin = basis.get("label") or basis.get("source") or "?"
    dtype = basis.get("flops_dtype")
    rows = []
    if basis.get("bandwidth"):
        value, unit = si_parts(basis["bandwidth"], "B/s")
        rows.append({"name": "memory "
                     "bandwidth", "value": value, "unit": unit, "source": origin,
                     "url": (chip.get("bandwidth_gbs") or {}).get("url")})
    if basis.get("flops"):
        value, unit = si_parts(basis["flops"], "FLOP/s")
        rows.append({"name": f"peak compute ({dtype})" if dtype else "peak compute", "value": value, "unit": unit,
                     "source": origin,
                     "url": ((chip.get("tflops") or {}).get(dtype) or {}).get("url")})
    if basis.get("ridge_point"):
        rows.append({"name": "ridge point", "value": f"{basis['ridge_point']:,.1f}", "unit": "FLOP/byte",
                     "source": "peak compute / bandwidth"})
    if basis.get("knee_batch"):
        rows.append({"name": "predicted decode knee", "value": f"{basis['knee_batch']:,.1f}", "unit": "sequences",
                     "source": "the batch where the compute bound meets the memory bound"})
    if basis.get("method"):
        rows.append({"name": "how they were found", "value": "", "source": basis["method"]})
    for caveat in dict.fromkeys(c for c in (basis.get("caveat"),
                                            (basis.get("probe_figures") or {}).get("caveat")) if c):
        rows.append({"name": "probed under load", "value": "", "source": caveat})  # every ceiling here likely low
    rows += [{"name": name, "value": "", "source": text} for name, text in described.terms(basis)]
    rows += [{"name": f"no ceiling: {names}", "value": "", "source": why} for names, why in described.uncovered(run)]
    rows += [{"name": name, "value": "", "source": text} for name, text in described.serving(run)]
    rows += [{"name": name, "value": "", "source": text} for name, text in overhead.lines(run)]
    return [{"unit": None, "url": None} | row | {"url": web_url(row.get("url"))} for row in rows]


def matrix(runs: list[dict]) -> dict:
    """Tests down, runs across, in the order the tests first appear; each line's best of the valid
    runs (a run left out, :func:`pdx.domain.headline.left_out`, is shown but never the best: ``left_out``
    says why per run, ``note`` how many)."""
    per_run = [{(r.test, r.phase, r.part): r for r in run_rows(run)} for run in runs]
    reasons = [headline.left_out(run) for run in runs]
    keys = list(dict.fromkeys(k for rows in per_run for k in rows))
    lines = []
    for test, phase, part in keys:
        cells = [rows.get((test, phase, part)) for rows in per_run]
        best = max((m for c, why in zip(cells, reasons) if c and not why and (m := c.measured) is not None),
                   default=None)
        lines.append({"test": test, "phase": phase, "part": part, "rows": cells, "best": best})
    return {"runs": runs, "lines": lines, "left_out": reasons, "note": headline.left_out_note(reasons)}
