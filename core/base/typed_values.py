"""A dataclass built from untyped values (a catalog's JSON, a plugin's option values), each checked against
the type its field declares, so that a wrong value fails in one line naming the field rather than deep inside
the code that uses it, and the fields are listed once: in the dataclass."""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import fields
from typing import TYPE_CHECKING, Mapping, TypeVar

from pdx.contract.errors import PdxError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")


class _Misfit(Exception):
    """A value that is not of the declared type."""


@functools.cache
def _hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)  # the annotations resolved (they are strings under `from __future__`)


def _fitted(value: object, hint: object) -> object:
    """``value`` as a field of type ``hint`` holds it (a JSON list as a tuple), or _Misfit. The types
    checked are those of plain records: bool, int, float, str, None, unions of them and tuple[X, ...]."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            try:
                return _fitted(value, arg)
            except _Misfit:
                continue
        raise _Misfit
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if isinstance(value, (list, tuple)):
            return tuple(_fitted(item, args[0]) for item in value)
        raise _Misfit
    if hint is type(None):
        fits = value is None
    elif hint is bool:
        fits = isinstance(value, bool)
    elif hint is int:
        fits = isinstance(value, int) and not isinstance(value, bool)
    elif hint is float:  # an int is a float to a type checker; kept as given
        fits = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif hint is str:
        fits = isinstance(value, str)
    else:
        raise TypeError(f"typed_values checks no field of type {hint}")  # a dataclass it was not made for
    if not fits:
        raise _Misfit
    return value


def _named(hint: object) -> str:
    return getattr(hint, "__name__", None) or str(hint)


def dataclass_from(cls: type[D], values: Mapping[str, object], where: str,
                   error: type[PdxError] = PdxError) -> D:
    """``cls`` built from ``values`` (by field name; a field with a default may be left out), each value of
    its field's declared type; ``error`` (``where``: what the values are) for an unknown field, a missing
    one or a value of another type."""
    declared = {f.name: f for f in fields(cls) if f.init}
    unknown = sorted(set(values) - set(declared))
    if unknown:
        raise error(f"{where}: unknown fields {', '.join(unknown)}", f"known: {', '.join(declared)}")
    checked: dict[str, object] = {}
    for name, field in declared.items():
        if name not in values:
            if field.default is field.default_factory:  # both MISSING: no default
                raise error(f"{where}: {name} is missing", f"give {name}")
            continue
        hint = _hints(cls)[name]
        try:
            checked[name] = _fitted(values[name], hint)
        except _Misfit:
            raise error(f"{where}: {name} must be {_named(hint)}, not {values[name]!r}") from None
    return cls(**checked)
