"""``--where KEY=VALUE[,KEY=VALUE...]``: the filters of :meth:`Registry.runs`, as users type them.

One parser for every command that selects runs (export, push, pull, report,
publish): pairs may be repeated or comma-separated; model and hardware match
part of a name or the start of an id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Literal, get_args

from pdx.contract.errors import PdxError

if TYPE_CHECKING:  # the store's module brings SQLAlchemy: not loaded to parse options
    from pdx.registry.store import RunFilters

WhereKey = Literal["backend", "model", "hardware", "tag", "status", "origin"]  # RunFilters' text filters
WHERE_KEYS: tuple[WhereKey, ...] = get_args(WhereKey)


def parse_where(items: Iterable[str] | None) -> RunFilters:
    """``["backend=a,model=b", "tag=c"]`` -> {"backend": "a", "model": "b", "tag": "c"}."""
    hint = f"use KEY=VALUE with KEY one of {', '.join(WHERE_KEYS)}"
    where: RunFilters = {}
    for item in items or ():
        for pair in filter(None, (p.strip() for p in item.split(","))):
            key, sep, value = pair.partition("=")
            key, value = key.strip().lower(), value.strip()
            if not sep or not value:
                raise PdxError(f"--where {pair!r}: not KEY=VALUE", hint)
            named = next((k for k in WHERE_KEYS if k == key), None)
            if named is None:
                raise PdxError(f"--where {pair!r}: unknown key {key!r}", hint)
            if where.get(named, value) != value:
                raise PdxError(f"--where: {key} is given twice ({where[named]!r} and {value!r})")
            where[named] = value
    return where


def describe(where: RunFilters) -> str:
    return ", ".join(f"{k}={v}" for k, v in where.items())
