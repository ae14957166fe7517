"""Which runs a report or site shows: run ids, ``--where`` filters, or both.

``--where backend=llamacpp,model=7b,hardware=M2`` keeps runs matching every
pair (the registry's own filters: model and hardware match part of a name or
the start of an id). Run ids may be unique prefixes, as everywhere in pdx.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from pdx.errors import PdxError

WHERE_KEYS = ("backend", "model", "hardware", "tag", "status")


def parse_where(items: Iterable[str] | None) -> dict[str, str]:
    """``["backend=a,model=b", "tag=c"]`` -> {"backend": "a", "model": "b", "tag": "c"}."""
    where: dict[str, str] = {}
    for item in items or ():
        for pair in filter(None, (p.strip() for p in item.split(","))):
            key, sep, value = pair.partition("=")
            key, value = key.strip().lower(), value.strip()
            if not sep or not value:
                raise PdxError(f"--where: {pair!r} is not KEY=VALUE", f"keys: {', '.join(WHERE_KEYS)}")
            if key not in WHERE_KEYS:
                raise PdxError(f"--where: unknown key {key!r}", f"use one of: {', '.join(WHERE_KEYS)}")
            if key in where and where[key] != value:
                raise PdxError(f"--where: {key} is given twice ({where[key]!r} and {value!r})")
            where[key] = value
    return where


def describe(refs: Sequence[str], where: dict[str, str]) -> str:
    parts = [f"{k}={v}" for k, v in where.items()]
    if refs:
        parts.insert(0, "run " + ", ".join(refs))
    return ", ".join(parts)


def select_runs(registry, refs: Sequence[str] = (), where: dict[str, str] | None = None) -> list[dict]:
    """The runs asked for, each with its samples, newest first; a one-line error if there are none."""
    where = where or {}
    if refs:
        ids = list(dict.fromkeys(registry.resolve(ref) for ref in refs))  # unknown ids fail here, by name
        runs = registry.get_runs(ids)
        if where:
            keep = {r["id"] for r in registry.runs(**where)}
            runs = [r for r in runs if r["id"] in keep]
    else:
        runs = registry.runs(**where, samples=True)
    if not runs:
        shown = describe(refs, where)
        raise PdxError(f"no runs match {shown}" if shown else f"registry {registry.display_url} holds no runs",
                       "list what is stored with `pdx runs`")
    return sorted(runs, key=lambda r: r["created_at"] or "", reverse=True)
