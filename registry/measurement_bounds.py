"""What no honest record holds in a test's other measurements: speculation counts and energy.

Rates and dates are :mod:`pdx.registry.plausibility`'s; these are the same kind of check, held to
counting and physics, run by the one record check (:mod:`pdx.registry.validate`) on every write
(bench, import, pull) and by ``pdx hub verify``:

- speculation (a sample's ``engine.speculation`` and a request's ``engine.timings``): counts are whole
  and non-negative, and a pass accepts no more than was drafted (0 <= accepted <= drafted) nor more
  than the tokens it counted;
- energy: a known version; every meter its joules (and idle watts) name is one its ``meters`` list;
  joules finite, and zero or at least :data:`MIN_JOULES`; a meter's mean power over the timed window,
  and its idle power, within :data:`MAX_WATTS` for what it covers.
"""

from __future__ import annotations

import math

from pdx.domain.energy.figures import ENERGY_VERSION

# The most a meter of each kind can draw, in watts: the largest part of that kind shipped, with
# headroom for what is not yet (each x 1.5 or more). Sources: NVIDIA's B200/B300 board up to 1,400 W
# and AMD's MI355X 1,400 W (vendor data sheets); AMD EPYC 9965 a 500 W TDP; DDR5 at ~10 W per DIMM,
# 24 DIMMs; Apple's M3 Ultra Mac Studio 480 W continuous for the whole machine; NVIDIA DGX B200 14.3 kW.
MAX_WATTS: dict[str, float] = {
    "gpu board": 2_500.0,
    "cpu package": 1_000.0,
    "dram": 500.0,
    "soc cpu": 500.0,
    "soc gpu": 500.0,
    "soc ane": 500.0,
    "soc dram": 500.0,
    "machine": 25_000.0,
}
# Below any meter's step (RAPL counts 15-61 microjoules, NVML millijoules): a reading this small is
# no reading; zero is (a meter that did not tick in a short window).
MIN_JOULES = 1e-6


def _whole(value: object) -> bool:
    return value.__class__ is int and value >= 0


def _counts_problem(drafted: object, accepted: object, tokens: object, names: tuple[str, str, str]) -> str | None:
    for value, name in zip((drafted, accepted, tokens), names):
        if value is not None and not _whole(value):
            return f"{name} {value!r} is not a whole number of tokens at least 0"
    if _whole(drafted) and _whole(accepted) and accepted > drafted:
        return f"{names[1]} {accepted} is more than {names[0]} {drafted}: a pass accepts only drafted tokens"
    if _whole(tokens) and _whole(accepted) and accepted > tokens:
        return f"{names[1]} {accepted} is more than the {tokens} output tokens counted ({names[2]})"
    return None


def speculation_problem(test: dict) -> tuple[str, str] | None:
    """(where in the test, why) for the first impossible speculation count; None when all are possible."""
    for i, sample in enumerate(test.get("samples") or ()):
        counts = (sample.get("engine") or {}).get("speculation") if isinstance(sample, dict) else None
        if isinstance(sample, dict) and isinstance(sample.get("engine"), dict) and "speculation" in sample["engine"]:
            if not isinstance(counts, dict):
                return f".samples[{i}].engine.speculation", f"{counts!r} is not an object of counts"
            problem = _counts_problem(counts.get("drafted"), counts.get("accepted"), counts.get("tokens"),
                                      ("drafted", "accepted", "tokens"))
            if problem:
                return f".samples[{i}].engine.speculation", problem
    for i, request in enumerate(test.get("requests") or ()):
        engine = request.get("engine") if isinstance(request, dict) else None
        timings = engine.get("timings") if isinstance(engine, dict) else None
        if isinstance(timings, dict) and "draft_n" in timings:
            problem = _counts_problem(timings.get("draft_n"), timings.get("draft_n_accepted"),
                                      timings.get("predicted_n"), ("draft_n", "draft_n_accepted", "predicted_n"))
            if problem:
                return f".requests[{i}].engine.timings", problem
    return None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def energy_problem(test: dict) -> tuple[str, str] | None:
    """(where in the test, why) for the first impossible figure of a test's energy; None when it could be."""
    energy = test.get("energy")
    if not isinstance(energy, dict):
        return None  # absent or null: measured without energy; a wrong type is the schema's
    version = energy.get("version")
    if version.__class__ is not int or not 1 <= version <= ENERGY_VERSION:
        return ".energy.version", f"{version!r} is no energy record version this pdx knows (1 to {ENERGY_VERSION})"
    covers = {m.get("name"): m.get("covers") for m in energy.get("meters") or () if isinstance(m, dict)}
    timed = energy.get("timed_s")
    for key in ("joules", "idle_watts"):
        figures = energy.get(key) or {}
        if not isinstance(figures, dict):
            continue
        for name, value in figures.items():
            where = f".energy.{key}[{name!r}]"
            if name not in covers:
                return where, f"names meter {name!r}, which the meters list does not ({', '.join(map(repr, covers)) or 'none'})"
            if not _number(value) or not math.isfinite(value) or value < 0:
                return where, f"{value!r} is not a finite figure at least 0"
            limit = MAX_WATTS.get(covers[name])
            if key == "joules":
                if 0 < value < MIN_JOULES:
                    return where, f"{value!r} J is below any meter's step ({MIN_JOULES:g} J)"
                if limit and _number(timed) and timed > 0 and value / timed > limit:
                    return where, (f"{value:.4g} J over {timed:.4g} s is {value / timed:.4g} W, more than a "
                                   f"{covers[name]} can draw ({limit:g} W)")
            elif limit and value > limit:
                return where, f"{value:.4g} W idle is more than a {covers[name]} can draw ({limit:g} W)"
    return None


def measurement_problem(test: dict) -> tuple[str, str] | None:
    """The first impossible speculation count or energy figure of a test, or None."""
    return speculation_problem(test) or energy_problem(test)
