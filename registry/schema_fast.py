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
from typing import Callable

Check = Callable[[object], bool]

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


def _type_check(names) -> Check:
    names = [names] if isinstance(names, str) else list(names)
    checks = [_TYPES[n] for n in names]
    if len(checks) == 1:
        return checks[0]
    return lambda v: any(c(v) for c in checks)


class _Compiler:
    def __init__(self, root: dict) -> None:
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

    def schema(self, schema) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict):
            raise Unsupported(f"schema {schema!r}")
        unknown = set(schema) - ANNOTATIONS - set(_KEYWORDS)
        if unknown:
            raise Unsupported(", ".join(sorted(unknown)))
        checks = [_KEYWORDS[k](self, schema[k], schema) for k in schema if k in _KEYWORDS]
        checks = [c for c in checks if c is not None]
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        if len(checks) == 2:
            first, second = checks
            return lambda v: first(v) and second(v)

        def every(v) -> bool:
            for check in checks:
                if not check(v):
                    return False
            return True
        return every


def _type(c, names, schema) -> Check:
    return _type_check(names)


def _bound(compare) -> Callable:
    def keyword(c, limit, schema) -> Check:
        return lambda v: not _is_number(v) or compare(v, limit)
    return keyword


def _length(compare) -> Callable:
    def keyword(c, limit, schema) -> Check:
        return lambda v: v.__class__ is not str or compare(len(v), limit)
    return keyword


def _count(compare) -> Callable:
    def keyword(c, limit, schema) -> Check:
        return lambda v: v.__class__ is not list or compare(len(v), limit)
    return keyword


def _pattern(c, pattern, schema) -> Check:
    search = re.compile(pattern).search
    return lambda v: v.__class__ is not str or search(v) is not None


def _enum(c, options, schema) -> Check:
    return lambda v: any(_same(v, o) for o in options)


def _const(c, value, schema) -> Check:
    return lambda v: _same(v, value)


def _required(c, names, schema) -> Check:
    return lambda v: v.__class__ is not dict or all(n in v for n in names)


def _properties(c, properties, schema) -> Check:
    compiled = {name: c.schema(sub) for name, sub in properties.items()}

    def check(v) -> bool:
        if v.__class__ is not dict:
            return True
        for name, value in v.items():
            rule = compiled.get(name)
            if rule is not None and not rule(value):
                return False
        return True
    return check


def _additional(c, rule, schema) -> Check | None:
    known = frozenset(schema.get("properties") or ())
    if rule is True:
        return None
    if rule is False:
        return lambda v: v.__class__ is not dict or all(k in known for k in v)
    compiled = c.schema(rule)
    return lambda v: v.__class__ is not dict or all(compiled(x) for k, x in v.items() if k not in known)


def _items(c, rule, schema) -> Check:
    if isinstance(rule, list):
        raise Unsupported("items as a list (draft 2019 and before)")
    compiled = c.schema(rule)

    def check(v) -> bool:
        if v.__class__ is list:
            for item in v:
                if not compiled(item):
                    return False
        return True
    return check


def _any_of(c, rules, schema) -> Check:
    compiled = [c.schema(r) for r in rules]
    return lambda v: any(r(v) for r in compiled)


def _reference(c, pointer, schema) -> Check:
    return c.ref(pointer)


_KEYWORDS: dict[str, Callable] = {
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


def compile_schema(schema: dict, definition: str | None = None) -> Check:
    """A predicate that is true only for documents ``schema`` accepts (or, with ``definition``, that
    its ``$defs`` entry of that name accepts); :class:`Unsupported` if the schema is beyond it."""
    compiler = _Compiler(schema)
    return compiler.ref(f"#/$defs/{definition}") if definition else compiler.schema(schema)
