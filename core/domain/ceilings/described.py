"""What a reader of any ceiling is told beside it, in one wording for the
terminal (``pdx show``), the run page and the report: where the chip's
figures come from, the data type the compute bound is for, where the
weights live, and whether KV reads at depth are counted."""

from __future__ import annotations


def terms(basis: dict | None) -> list[tuple[str, str]]:
    """(name, text) pairs for a run's ceiling basis; none for a run without ceilings."""
    if not basis or basis.get("source") == "none":
        return []
    out = []
    if basis.get("figures_from"):
        out.append(("figures from", basis["figures_from"]))
    if basis.get("compute_dtype"):
        used = basis.get("flops_dtype")
        figure = f"the {used} figure" if used else "no FLOP/s figure for it: prefill has no ceiling"
        why = f" ({basis['compute_dtype_note']})" if basis.get("compute_dtype_note") else ""
        out.append(("compute bound", f"{basis['compute_dtype']} work; {figure}{why}"))
    place = basis.get("placement") or {}
    if place.get("described"):
        out.append(("placement", place["described"]))
    if basis.get("devices_note"):
        out.append(("devices", basis["devices_note"]))
    if "kv_counted" in basis:
        out.append(("KV reads", "counted at each test's depth" if basis["kv_counted"] else "not counted"))
    for note in basis.get("left_out") or ():
        out.append(("left out", note))
    return out


def line(basis: dict | None) -> str:
    """The same, as one line."""
    return "; ".join(f"{name}: {text}" for name, text in terms(basis))


def serving(run: dict) -> list[tuple[str, str]]:
    """(test, text) for each serving test's decode ceiling at its concurrency and the share of it the output
    rate reached, or why it has none."""
    out = []
    for test in run.get("tests") or ():
        record = test.get("ceilings") or {}
        if test.get("kind") != "serve" or "concurrency" not in record:
            continue  # a serving test pdx measured has its phases' ceilings, shown as any test's are
        if not record.get("ceiling"):
            out.append((test["name"], f"no decode ceiling ({record.get('missing') or 'figures unknown'})"))
            continue
        share = record.get("fraction")
        said = "unknown" if share is None else f"{share:.0%}" + (f" (ABOVE it: {record['warning']})"
                                                                 if record.get("above_ceiling") else "")
        bound = {"memory": "mem", "compute": "cmp"}.get(record.get("bound") or "", "?")
        rate = record["ceiling"]
        shown = f"{rate:,.0f}" if rate >= 1000 else f"{rate:.4g}"
        out.append((test["name"], f"decode ceiling at concurrency {record['concurrency']}: {shown} tok/s {bound}; "
                                  f"output token throughput {said} of it"))
    return out


def uncovered(run: dict) -> list[tuple[str, str]]:
    """(tests, why) for the timed tests that have no ceiling, grouped by the reason: every pp and tg row
    has a ceiling or a named reason wherever it is shown."""
    basis = run.get("ceiling_basis") or {}
    reasons: dict[str, list[str]] = {}
    for test in run.get("tests") or ():
        if test.get("kind") not in ("pp", "tg", "pg") or test.get("status") != "ok":
            continue
        record = test.get("ceilings") or {}
        if record.get("ceiling"):
            continue
        why = record.get("missing") or basis.get("reason") or "no hardware figures were recorded for this run"
        reasons.setdefault(why, []).append(test["name"])
    return [(", ".join(names), why) for why, names in reasons.items()]
