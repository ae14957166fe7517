"""Ceilings in the terminal: the bench table's columns, the line saying
which figures were used, and a loud line for any rate above its ceiling."""

from __future__ import annotations

from rich.console import Console

from pdx.domain.ceilings import described, overhead
from pdx.base.units import fmt_si

_SHORT = {"memory": "mem", "compute": "cmp", None: "?"}  # ?: one bound unknown, so neither is named


def rate(value: float) -> str:
    """A tokens/s figure to about three significant digits: 104.4, 1,930, 0.52."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.4g}" if value >= 1 else f"{value:.2g}"


def _phases(record: dict) -> list[tuple[str, dict]]:
    phases = record.get("phases", {})
    return [(short, phases[name]) for short, name in (("pp", "prefill"), ("tg", "decode")) if name in phases]


def ceiling_cell(test: dict) -> str:
    """"117 mem" (memory-bound), "678 cmp" (compute-bound), "117 ?" (the only bound known); "-": none."""
    record = test.get("ceilings")
    if not record or not record.get("ceiling"):
        return "-"
    text = f"{rate(record['ceiling'])} {_SHORT.get(record.get('bound'), '?')}"
    if record.get("sources"):  # judged against a vendor's peak and a probe: say whose ceiling binds
        text += f" {record['source']}"
    phases = _phases(record)
    if len(phases) == 2:
        text += " (" + ", ".join(f"{short} {_SHORT.get(p['bound'], '?')}" for short, p in phases) + ")"
    return text


def _fraction(entry: dict) -> str:
    fraction = entry.get("fraction")
    if fraction is None:
        return "-"
    return f"[bold red]{fraction:.0%} ABOVE[/bold red]" if entry.get("above_ceiling") else f"{fraction:.0%}"


def fraction_cell(test: dict) -> str:
    record = test.get("ceilings") or {}
    text = _fraction(record)
    phases = _phases(record)
    if len(phases) == 2 and any(p.get("fraction") is not None for _, p in phases):
        text += " (" + ", ".join(f"{short} {_fraction(p)}" for short, p in phases) + ")"
    return text


def basis_line(run: dict) -> str:
    basis = run.get("ceiling_basis")
    if not basis and run.get("origin", "pdx") != "pdx":
        return f"ceilings: not computed (imported from {run['origin']} by a pdx that did not judge imports)"
    if not basis:
        return "ceilings: not computed (a run stored before pdx computed ceilings)"
    if basis.get("source") == "none":
        return f"ceilings: none ({basis.get('reason')})"
    flops = f"{fmt_si(basis.get('flops'), 'FLOP/s')} {basis.get('flops_dtype') or ''}".strip() \
        if basis.get("flops") else "FLOP/s unknown"
    where = f"catalog, {basis.get('label')}" if basis["source"] == "catalog" else basis.get("label")
    line = f"ceilings from {where}: {fmt_si(basis.get('bandwidth'), 'B/s')} memory, {flops}"
    if basis.get("imported"):
        line += f" (an imported run; the device named by {basis.get('device_from')})"
    if basis.get("probe_figures"):
        probed = basis["probe_figures"]
        line += (f"; and {probed.get('label')}: {fmt_si(probed.get('bandwidth'), 'B/s')} memory, "
                 f"{fmt_si(probed.get('flops'), 'FLOP/s')} {probed.get('flops_dtype') or ''}".rstrip()
                 + " (the lower ceiling binds)")
    if basis.get("ridge_point"):
        knee = basis.get("knee_batch")
        line += f"; ridge {basis['ridge_point']:.3g} FLOP/byte, " + \
            (f"decode turns compute-bound at batch ~{knee:.3g}" if knee else "decode stays memory-bound at any batch")
        if knee and basis.get("knee_experts_per_layer"):
            line += f" ({basis['knee_experts_per_layer']:.3g} experts per layer read there)"
    if basis.get("routing"):
        line += f"; experts: {basis['routing']}"
    for caveat in dict.fromkeys(c for c in (basis.get("caveat"),
                                            (basis.get("probe_figures") or {}).get("caveat")) if c):
        line += f"; {caveat}"  # a probe taken under load: every ceiling above is likely low
    told = described.line(basis)
    return f"{line}; {told}" if told else line


def serve_lines(run: dict) -> list[str]:
    """A serving test's decode ceiling at its concurrency, and the share of it the output rate reached."""
    return [f"{name}: {text}" for name, text in described.serving(run)]


def bound_lines(run: dict) -> list[str]:
    """The third bound, fixed cost per token, under the ceilings' line: where the run's depth sweep gives it."""
    return [f"{name}: {text}" for name, text in overhead.lines(run)]


def print_warnings(run: dict, console: Console) -> None:
    for test in run["tests"]:
        record = test.get("ceilings") or {}
        entries = [record, *record.get("phases", {}).values()]
        for entry in entries:
            if entry.get("warning"):
                console.print(f"[bold red]{test['name']}: {entry['warning']}[/bold red]", highlight=False)



def print_ceiling_moves(runs: list[dict], console: Console) -> None:
    """Across runs (e.g. -t 1,2): how each figure and each test's ceiling moved."""
    first, *rest = runs
    for run in rest:
        a, b = first.get("ceiling_basis") or {}, run.get("ceiling_basis") or {}
        if not (a.get("bandwidth") and b.get("bandwidth")):
            continue
        moved = [f"{name} {fmt_si(a[key], unit)} -> {fmt_si(b[key], unit)} (x{b[key] / a[key]:.2f})"
                 for name, key, unit in (("bandwidth", "bandwidth", "B/s"), ("FLOP/s", "flops", "FLOP/s"))
                 if a.get(key) and b.get(key)]
        console.print(f"ceilings {_run_label(first)} -> {_run_label(run)}: {'; '.join(moved)}", highlight=False)
        tests = {t["name"]: t for t in run["tests"]}
        for test in first["tests"]:
            other = tests.get(test["name"])
            before, after = (test.get("ceilings") or {}), ((other or {}).get("ceilings") or {})
            if before.get("ceiling") and after.get("ceiling"):
                console.print(f"  {test['name']}: {rate(before['ceiling'])} {_SHORT[before['bound']]} -> "
                              f"{rate(after['ceiling'])} {_SHORT[after['bound']]}; reached "
                              f"{before.get('fraction') or 0:.0%} -> {after.get('fraction') or 0:.0%}", highlight=False)


def _run_label(run: dict) -> str:
    return f"{run['backend']} {run['threads']}t"
