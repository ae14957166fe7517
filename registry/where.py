"""``--where KEY=VALUE[,KEY=VALUE...]``: the filters of :meth:`Registry.runs`, as users type them.

One parser for every command that selects runs (export, push, pull, report,
publish): pairs may be repeated or comma-separated; model and hardware match
part of a name or the start of an id.
"""

from __future__ import annotations

from typing import Iterable

from pdx.contract.errors import PdxError

WHERE_KEYS = ("backend", "model", "hardware", "tag", "status", "origin")


def parse_where(items: Iterable[str] | None) -> dict[str, str]:
    """``["backend=a,model=b", "tag=c"]`` -> {"backend": "a", "model": "b", "tag": "c"}."""
    hint = f"use KEY=VALUE with KEY one of {', '.join(WHERE_KEYS)}"
    where: dict[str, str] = {}
    for item in items or ():
        for pair in filter(None, (p.strip() for p in item.split(","))):
            key, sep, value = pair.partition("=")
            key, value = key.strip().lower(), value.strip()
            if not sep or not value:
                raise PdxError(f"--where {pair!r}: not KEY=VALUE", hint)
            if key not in WHERE_KEYS:
                raise PdxError(f"--where {pair!r}: unknown key {key!r}", hint)
            if where.get(key, value) != value:
                raise PdxError(f"--where: {key} is given twice ({where[key]!r} and {value!r})")
            where[key] = value
    return where


def describe(where: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in where.items())
