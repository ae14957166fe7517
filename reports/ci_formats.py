"""A run's figures in the formats continuous-benchmarking tools read: Bencher's metric format (BMF) and
github-action-benchmark's custom JSON.

Each pp/tg test is one benchmark, named by the model and the test (``llama-8b-q4_0 pp512``); its figure
is the mean rate over the stored repetitions in tokens/s, with its 95% CI where there are two
repetitions or more. Rates are bigger-is-better: Bencher's ``throughput`` measure, and
github-action-benchmark's ``customBiggerIsBetter`` tool. The machine is the tool's to track (Bencher's
testbed, the action's benchmark name), so it is not in the names. Serving tests (latency
distributions) and tests with no figure are left out.
"""

from __future__ import annotations

from pdx.contract.errors import PdxError

FORMATS = {"bmf": "Bencher metric format (throughput, t/s)",
           "gab": "github-action-benchmark, tool customBiggerIsBetter (t/s)"}
BMF_MEASURE = "throughput"  # Bencher's built-in measure of operations per second
UNIT = "t/s"


def _figures(run: dict) -> list[tuple[str, dict]]:
    """(benchmark name, the rate's summary) of each test with a rate, in the run's order."""
    out = []
    for test in run["tests"]:
        rate = (test.get("stats") or {}).get("rate") or {}
        if test.get("kind") != "serve" and rate.get("mean"):
            out.append((f"{run['model']['name']} {test['name']}", rate))
    if not out:
        raise PdxError(f"run {run['id'][:12]}: no test with a rate to export", "see `pdx show RUN`")
    return out


def bmf(run: dict) -> dict:
    """``{benchmark: {"throughput": {value, lower_value, upper_value}}}``."""
    out = {}
    for name, rate in _figures(run):
        metric = {"value": rate["mean"]}
        if rate.get("ci95") is not None:
            metric |= {"lower_value": rate["mean"] - rate["ci95"], "upper_value": rate["mean"] + rate["ci95"]}
        out[name] = {BMF_MEASURE: metric}
    return out


def gab(run: dict) -> list[dict]:
    """``[{name, unit, value, range, extra}]``: ``range`` is the 95% CI's half-width as the action shows it."""
    engine = run.get("engine") or {}
    version = " ".join(str(v) for v in (engine.get("name"), engine.get("version"), engine.get("commit")) if v)
    out = []
    for name, rate in _figures(run):
        entry = {"name": name, "unit": UNIT, "value": rate["mean"]}
        if rate.get("ci95") is not None:
            entry["range"] = f"± {rate['ci95']:.4g}"
        entry["extra"] = f"run {run['id']}; {rate.get('n') or '?'} repetitions; {version}".strip("; ")
        out.append(entry)
    return out


def export_figures(run: dict, fmt: str):
    if fmt not in FORMATS:
        raise PdxError(f"format {fmt!r}: unknown", f"use one of {', '.join(FORMATS)}")
    return bmf(run) if fmt == "bmf" else gab(run)
