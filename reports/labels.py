"""Names people read, file names a site can hold, and numbers set for tables.

Every label comes from stored data (model names, hardware names, tags) and
may hold anything, markup included: templates escape it and charts carry it
as data, never as code. Slugs are plain ``[a-z0-9-]`` so no stored name can
steer a file path.
"""

from __future__ import annotations

import math
import re

from pdx.base.units import human_bytes, human_count

__all__ = ["human_bytes", "human_count", "slug", "hardware_label", "system_label", "fmt_rate", "fmt_pct"]


def slug(text: str, suffix: str = "", limit: int = 40) -> str:
    """``"Apple M2 Max"`` -> ``"apple-m2-max"``; the suffix (an id prefix) keeps slugs unique."""
    base = re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")[:limit].strip("-") or "x"
    tail = re.sub(r"[^a-z0-9]+", "", str(suffix).lower())
    return f"{base}-{tail}" if tail else base


def hardware_label(run: dict) -> str:
    hw = run["hardware"]
    gpus = hw.get("gpus") or []
    if gpus:
        names = [g.get("name") or "GPU" for g in gpus]
        first = names[0]
        return f"{len(names)}x {first}" if names.count(first) == len(names) > 1 else ", ".join(dict.fromkeys(names))
    return hw.get("name") or "unknown hardware"


def model_label(run: dict) -> str:
    return run["model"]["name"]


def system_label(run: dict, with_model: bool = False) -> str:
    """What ran: hardware and backend (and model), as a chart legend shows it."""
    parts = [hardware_label(run), run["backend"]]
    if with_model:
        parts.insert(1, model_label(run))
    return " · ".join(parts)


def system_threads_label(run: dict) -> str:
    """A system and the threads it ran with: 1 and 2 threads of one machine are two series."""
    threads = f" · {run['threads']}t" if run.get("threads") else ""
    return system_label(run) + threads


def run_label(run: dict) -> str:
    threads = f" · {run['threads']}t" if run.get("threads") else ""
    return f"{run['id'][:8]} · {run['backend']}{threads}"


def _who(run: dict) -> tuple[tuple[str, str], ...]:
    """What a chart's series must tell apart: (key, name) of the machine, the model and the engine."""
    return ((run["hardware"].get("id") or "", hardware_label(run)),
            (run["model"].get("sha256") or "", model_label(run)), (run["backend"], run["backend"]))


def series_namer(runs: list[dict], namer):
    """``namer`` for one page's charts, made to name one model on one machine and engine per series:
    where the page's runs differ in machine, model or engine, a name that does not show that part
    gets it (a legend says which model a line is); and a name still standing for runs that differ
    gets the short keys that tell them apart (two models of one name). So no line of a chart joins
    two models, machines or engines."""
    varied = [len({who[i][0] for who in map(_who, runs)}) > 1 for i in range(3)]
    if not any(varied):
        return namer

    def shown(run: dict) -> str:
        name = namer(run)
        words = name.split(" · ")
        extra = [label for (key, label), differs in zip(_who(run), varied) if differs and label not in words]
        return " · ".join([name, *extra]) if extra else name

    holders: dict[str, set] = {}
    for run in runs:
        holders.setdefault(shown(run), set()).add(tuple(key for key, _ in _who(run)))
    clashing = {name for name, who in holders.items() if len(who) > 1}
    if not clashing:
        return shown

    def named(run: dict) -> str:
        name = shown(run)
        if name not in clashing:
            return name
        keys = [key for key, _ in _who(run)]
        parts = [keys[i][:8] for i in range(3) if len({who[i] for who in holders[name]}) > 1]
        return f"{name} ({', '.join(parts)})"

    return named


def fmt_rate(value: float | None) -> str:
    """Tokens/s with the precision a reader can use: 65,007 · 407 · 37.1 · 5.43."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_pct(fraction: float | None, digits: int = 0) -> str:
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return "—"
    return f"{fraction * 100:.{digits}f}%"


def short_time(iso: str | None) -> str:
    return (iso or "")[:16].replace("T", " ")
