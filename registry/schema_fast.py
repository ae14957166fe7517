"""A fast yes for documents that meet the bundle schema.

jsonschema is the authority on the schema, and the one that names what is wrong; it also spends
about 14 ms on one run's bundle, which is most of reading a results folder of 100,000 files.
This module compiles the same schema into plain Python predicates (about a tenth of the cost)
that answer one question: does the document pass? A yes is trusted; a no is handed to jsonschema,
which says why (or, should the two ever differ, has the last word). So the predicates may be
stricter than the schema, never looser, and the schema file stays the one definition.

Only the keywords the bundle schema uses are compiled; a schema using any other makes
:func:`compile_schema` raise, and the caller then asks jsonschema every time.
"""

from __future__ import annotations

import re
from typing import Any, Callable

Check = Callable[[object], bool]
JSON = Any  # a schema's part: JSON, any of its kinds
# A keyword's compiler: (compiler, the keyword's value, the schema holding it) -> its check, None: none needed
Keyword = Callable[["_Compiler", JSON, dict[str, JSON]], "Check | None"]
Compare = Callable[[Any, Any], bool]  # a number (or a length) against the keyword's limit

# Annotations: they assert nothing (format included: jsonschema asserts it only with a format checker).
ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "examples", "default", "format",
                         "$defs", "deprecated", "readOnly", "writeOnly"})


class Unsupported(Exception):
    """The schema uses a keyword this compiler does not know."""


def _is_number(value: object) -> bool:
    return value.__class__ in (int, float)


_TYPES: dict[str, Check] = {
    "null": lambda v: v is None,
    "boolean": lambda v: v.__class__ is bool,
    "string": lambda v: v.__class__ is str,
    "array": lambda v: v.__class__ is list,
    "object": lambda v: v.__class__ is dict,
    "number": _is_number,
    # A float that is a whole number is an integer to JSON Schema, not to pdx (bundle_schema's validator).
    "integer": lambda v: v.__class__ is int,
}


def _same(a: object, b: object) -> bool:
    """JSON equality, stricter than the schema's (1 and 1.0 differ here): a no only costs time."""
    return a.__class__ is b.__class__ and a == b


def _type_check(names: str | list[str]) -> Check:
    checks = [_TYPES[n] for n in ([names] if isinstance(names, str) else names)]
    if len(checks) == 1:
        return checks[0]
    return lambda v: any(c(v) for c in checks)


class _Compiler:
    def __init__(self, root: dict[str, JSON]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, pointer: str) -> Check:
        if not pointer.startswith("#/$defs/") or pointer.count("/") != 2:
            raise Unsupported(f"$ref {pointer}")
        if pointer not in self.refs:
            holder: list[Check] = []
            self.refs[pointer] = lambda v: holder[0](v)  # a definition may refer to itself
            holder.append(self.schema(self.root["$defs"][pointer.rsplit("/", 1)[1]]))
        return self.refs[pointer]

    def schema(self, schema: JSON) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict):
            raise Unsupported(f"schema {schema!r}")
        unknown = set(schema) - ANNOTATIONS - set(_KEYWORDS)
        if unknown:
            raise Unsupported(", ".join(sorted(unknown)))
        found = [_KEYWORDS[k](self, schema[k], schema) for k in schema if k in _KEYWORDS]
        checks = [c for c in found if c is not None]
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        if len(checks) == 2:
            first, second = checks
            return lambda v: first(v) and second(v)

        def every(v: object) -> bool:
            for check in checks:
                if not check(v):
                    return False
            return True
        return every


def _type(c: _Compiler, names: str | list[str], schema: dict[str, JSON]) -> Check:
    return _type_check(names)


def _bound(compare: Compare) -> Keyword:
    def keyword(c: _Compiler, limit: float, schema: dict[str, JSON]) -> Check:
        return lambda v: not _is_number(v) or compare(v, limit)
    return keyword


def _length(compare: Compare) -> Keyword:
    def keyword(c: _Compiler, limit: int, schema: dict[str, JSON]) -> Check:
        return lambda v: v.__class__ is not str or compare(len(v), limit)
    return keyword


def _count(compare: Compare) -> Keyword:
    def keyword(c: _Compiler, limit: int, schema: dict[str, JSON]) -> Check:
        return lambda v: v.__class__ is not list or compare(len(v), limit)
    return keyword


def _pattern(c: _Compiler, pattern: str, schema: dict[str, JSON]) -> Check:
    search = re.compile(pattern).search
    return lambda v: v.__class__ is not str or search(v) is not None


def _enum(c: _Compiler, options: list[JSON], schema: dict[str, JSON]) -> Check:
    return lambda v: any(_same(v, o) for o in options)


def _const(c: _Compiler, value: JSON, schema: dict[str, JSON]) -> Check:
    return lambda v: _same(v, value)


def _required(c: _Compiler, names: list[str], schema: dict[str, JSON]) -> Check:
    return lambda v: v.__class__ is not dict or all(n in v for n in names)


def _properties(c: _Compiler, properties: dict[str, JSON], schema: dict[str, JSON]) -> Check:
    compiled = {name: c.schema(sub) for name, sub in properties.items()}

    def check(v: object) -> bool:
        if type(v) is not dict:  # type(), not isinstance: a subclass passes, as with __class__ elsewhere
            return True
        for name, value in v.items():
            rule = compiled.get(name)
            if rule is not None and not rule(value):
                return False
        return True
    return check


def _additional(c: _Compiler, rule: JSON, schema: dict[str, JSON]) -> Check | None:
    known = frozenset(schema.get("properties") or ())
    if rule is True:
        return None
    if rule is False:
        return lambda v: v.__class__ is not dict or all(k in known for k in v)
    compiled = c.schema(rule)
    return lambda v: v.__class__ is not dict or all(compiled(x) for k, x in v.items() if k not in known)


def _items(c: _Compiler, rule: JSON, schema: dict[str, JSON]) -> Check:
    if isinstance(rule, list):
        raise Unsupported("items as a list (draft 2019 and before)")
    compiled = c.schema(rule)

    def check(v: object) -> bool:
        if type(v) is list:
            for item in v:
                if not compiled(item):
                    return False
        return True
    return check


def _any_of(c: _Compiler, rules: list[JSON], schema: dict[str, JSON]) -> Check:
    compiled = [c.schema(r) for r in rules]
    return lambda v: any(r(v) for r in compiled)


def _reference(c: _Compiler, pointer: str, schema: dict[str, JSON]) -> Check:
    return c.ref(pointer)


_KEYWORDS: dict[str, Keyword] = {
    "type": _type,
    "minimum": _bound(lambda v, m: v >= m),
    "maximum": _bound(lambda v, m: v <= m),
    "exclusiveMinimum": _bound(lambda v, m: v > m),
    "exclusiveMaximum": _bound(lambda v, m: v < m),
    "minLength": _length(lambda n, m: n >= m),
    "maxLength": _length(lambda n, m: n <= m),
    "minItems": _count(lambda n, m: n >= m),
    "maxItems": _count(lambda n, m: n <= m),
    "pattern": _pattern,
    "enum": _enum,
    "const": _const,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional,
    "items": _items,
    "anyOf": _any_of,
    "$ref": _reference,
}


def compile_schema(schema: dict[str, JSON], definition: str | None = None) -> Check:
    """A predicate that is true only for documents ``schema`` accepts (or, with ``definition``, that
    its ``$defs`` entry of that name accepts); :class:`Unsupported` if the schema is beyond it."""
    compiler = _Compiler(schema)
    return compiler.ref(f"#/$defs/{definition}") if definition else compiler.schema(schema)
