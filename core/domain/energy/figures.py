"""What a test's stored energy record says: joules per token of its phase, watts, tokens per
joule, the same net of idle, and what the energy costs. Pure arithmetic, one definition for every
reader (``pdx show``, run pages, reports, the site's JSON, the hub's ranking).

The record (``test["energy"]``, written by :mod:`pdx.measure.energy.session`) holds each meter's joules
over the test's timed windows, their total length, the idle watts measured before the run's first
test, and the price the run was costed at. A test's phase decides its tokens: a prefill test's
prompt tokens, a decode test's generated tokens, a pp+tg test's both, a serving test's generated
tokens (its prompts' energy charged to them, as a serving bill is).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

ENERGY_VERSION = 1
JOULES_PER_KWH = 3.6e6
# The price a run is costed at when none is given; every cost shown names its price.
DEFAULT_PRICE_KWH = 0.15
DEFAULT_CURRENCY = "USD"
# A test's timed time must span this many steps of its coarsest meter for its energy to be read
# to about a tenth (each window edge can be off by up to a step).
MIN_STEPS = 10
PHASES = {"pp": "prefill", "tg": "decode", "pg": "prefill+decode", "serve": "serving"}


MAX_PRICE_KWH = 1e6  # per kWh in any currency: a thousand times the dearest retail price, which binds no real one


def parse_price(text: str) -> tuple[float, str]:
    """``"0.32"``, ``"0.32 EUR"`` or ``"0.32EUR"`` -> (0.32, "EUR"); currency defaults to USD."""
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]{3})?\s*", text or "")
    if not found:
        raise ValueError(f"{text!r} is not a price per kWh (e.g. 0.32 or '0.32 EUR')")
    price = float(found[1])
    if price > MAX_PRICE_KWH:  # 400 nines read as inf: no price, and every cost after it would be inf
        raise ValueError(f"{found[1][:20]}{'...' if len(found[1]) > 20 else ''} per kWh is over "
                         f"{MAX_PRICE_KWH:g}, no price of electricity")
    return price, (found[2] or DEFAULT_CURRENCY).upper()


def phase_tokens(test: Mapping[str, Any]) -> tuple[str, int]:
    """The test's phase and the tokens its energy is divided by: those of the samples whose windows the
    meters read (``energy.samples_read``; all of them where it is null)."""
    kind: str = test.get("kind") or ""
    read = set((test.get("energy") or {}).get("samples_read") or ())
    if kind == "serve":
        done = [r for r in test.get("requests") or [] if r.get("status") == "ok"
                and (not read or r.get("sample_idx") in read)]
        return PHASES[kind], sum(r.get("n_gen") or 0 for r in done)
    samples = [s for i, s in enumerate(test.get("samples") or []) if not read or i in read]
    prompt = sum(s.get("n_prompt") or 0 for s in samples)
    gen = sum(s.get("n_gen") or 0 for s in samples)
    return PHASES.get(kind, kind or "?"), {"pp": prompt, "tg": gen}.get(kind, prompt + gen)


def energy_stats(test: Mapping[str, Any]) -> dict | None:
    """The figures of a test's energy record; None when it has none (no meter, or energy off)."""
    record = test.get("energy")
    if not record or not record.get("joules") or not record.get("timed_s"):
        return None
    joules = sum(record["joules"].values())
    seconds = record["timed_s"]
    phase, tokens = phase_tokens(test)
    watts = joules / seconds
    idle = sum(record["idle_watts"].values()) if record.get("idle_watts") else None
    net_joules = max(0.0, joules - idle * seconds) if idle is not None else None
    price, currency = record.get("price_kwh", DEFAULT_PRICE_KWH), record.get("currency", DEFAULT_CURRENCY)
    per_token = joules / tokens if tokens else None
    return {
        "phase": phase, "tokens": tokens, "joules": joules, "seconds": seconds, "watts": watts,
        "idle_watts": idle, "net_watts": max(0.0, watts - idle) if idle is not None else None,
        "j_per_token": per_token,
        "net_j_per_token": net_joules / tokens if tokens and net_joules is not None else None,
        "tokens_per_joule": tokens / joules if joules > 0 else None,
        "cost_per_mtok": cost_per_million(per_token, price) if per_token is not None else None,
        "price_kwh": price, "currency": currency, "price_said": record.get("price_said", "default"),
        "covers": sorted({m["covers"] for m in record.get("meters") or []}),
        "coarse": bool(record.get("coarse")), "lengthened": record.get("lengthened") or 0,
    }


def cost_per_million(j_per_token: float, price_kwh: float) -> float:
    """Currency per million tokens at ``price_kwh`` per kWh."""
    return j_per_token * 1e6 / JOULES_PER_KWH * price_kwh


def short_of(timed_s: float, resolution_s: float) -> float:
    """Seconds of timed work a test still needs for its energy to be readable (0 when it has enough)."""
    return max(0.0, MIN_STEPS * resolution_s - timed_s)


def why_none(found: dict) -> str:
    """Why a machine has no meter, as :meth:`Found.to_dict` says it: the sources grouped by reason."""
    by_reason: dict[str, list[str]] = {}
    for source, reason in found["missing"].items():
        by_reason.setdefault(reason, []).append(source)
    return "; ".join(f"{', '.join(sources)}: {reason}" for reason, sources in by_reason.items()) or "no meter source"
