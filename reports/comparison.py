"""Two runs test by test, as pages show them.

The statistics are :mod:`pdx.reports.sample_compare`'s (Mann-Whitney U on the raw samples
plus a minimum factor, with asv's marks) and the terminal shows them as
``pdx check`` does; this module words them for pages: better, worse, not
significant.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdx.reports.rows import PHASE_OF_KIND
from pdx.reports.sample_compare import DEFAULT_FACTOR, compare_runs

# asv's marks read "the new run is ... than the baseline".
VERDICTS = {"-": "better", "+": "worse", "!": "worse", "~": "not significant", " ": "not significant",
            "x": "not compared"}


@dataclass(frozen=True)
class Line:
    test: str
    phase: str
    mark: str
    verdict: str
    base_rate: float | None
    new_rate: float | None
    change: float | None  # new rate / base rate - 1: above 0 is faster
    p_value: float | None
    note: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def compare(base: dict, new: dict, factor: float | None = None, comparisons: list | None = None) -> list[Line]:
    """Every test of either run, matched by name (depth and batch included); ``comparisons``:
    pdx.reports.sample_compare's, where the caller has them already."""
    kinds = {t["name"]: t["kind"] for run in (base, new) for t in run["tests"]}
    lines = []
    for c in comparisons if comparisons is not None else compare_runs(base, new, factor or DEFAULT_FACTOR):
        change = c.new_rate / c.base_rate - 1 if c.base_rate and c.new_rate else None
        lines.append(Line(c.name, PHASE_OF_KIND.get(kinds.get(c.name), ""), c.mark, VERDICTS.get(c.mark, "not compared"),
                          c.base_rate, c.new_rate, change, c.p_value, c.note))
    return lines


def measured(run: dict) -> set[str]:
    """The names of the tests a run measured (a failed test compares with nothing)."""
    return {t["name"] for t in run["tests"] if t.get("status") == "ok"}


def comparable_pair(runs: list[dict]) -> tuple[dict, dict] | None:
    """(new, baseline) of a configuration's runs (newest first): the newest run that measured a test an
    earlier run measured too, and the newest such earlier run; None where no two runs share a test.
    Two runs that share no test make a page of rows "not compared": a comparison of nothing."""
    for index, new in enumerate(runs):
        mine = measured(new)
        if mine:
            base = next((older for older in runs[index + 1:] if mine & measured(older)), None)
            if base is not None:
                return new, base
    return None


def differences(base: dict, new: dict) -> list[tuple[str, str, str]]:
    """What differs in how the two runs were made: (what, baseline, new)."""
    def facts(run: dict) -> dict:
        engine = run["engine"]
        return {"hardware": run["hardware"].get("name"), "model": run["model"]["name"],
                "model sha256": run["model"]["sha256"][:12], "backend": run["backend"],
                "engine": f"{engine['name']} {engine.get('version') or ''} {engine.get('commit') or ''}".strip(),
                "threads": str(run.get("threads")), "options": str(run.get("options") or {}),
                "pdx": run["pdx_version"]}

    a, b = facts(base), facts(new)
    return [(key, a[key], b[key]) for key in a if a[key] != b[key]] + _speculation_differences(base, new)


def _speculation_differences(base: dict, new: dict) -> list[tuple[str, str, str]]:
    """Where either run speculates: its method, and what each test's drafts did, side by side."""
    methods = [(run["engine"].get("settings") or {}).get("speculation") for run in (base, new)]
    if not any(methods):
        return []
    said = [speculation_text(m) for m in methods]
    out = [("speculative decoding", *said)] if said[0] != said[1] else []
    tests = [{t["name"]: t for t in run["tests"]} for run in (base, new)]
    for name in dict.fromkeys([*tests[0], *tests[1]]):
        counts = [((run.get(name) or {}).get("stats") or {}).get("speculation") for run in tests]
        if any(counts):
            out.append((f"{name}: drafts accepted", *[accepted_text(c) for c in counts]))
    return out


def speculation_text(method: dict | None) -> str:
    if not method:
        return "none"
    draft = (method.get("draft_model") or {}).get("name")
    length = method.get("draft_max") or method.get("num_draft_tokens") or method.get("num_speculative_tokens")
    parts = [method.get("method") or "default method", f"draft {draft}" if draft else "",
             f"up to {length} drafted" if length else "", "synthetic acceptance" if method.get(
                 "synthetic_accept_length") else ""]
    return ", ".join(p for p in parts if p)


def accepted_text(counts: dict | None) -> str:
    if not counts:
        return "—"
    share = f" ({counts['acceptance']:.0%})" if counts.get("acceptance") is not None else ""
    return f"{counts['accepted']:,} of {counts['drafted']:,}{share}, {counts['tokens_per_pass']:.2f} tokens a pass"


def change_chart_data(lines: list[Line]) -> list[dict]:
    return [{"test": line.test, "change": line.change, "verdict": line.verdict}
            for line in lines if line.change is not None]
