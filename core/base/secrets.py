"""Secrets out of everything pdx records: credentials in URLs, and the values of
flags and options that name a key, token, secret or password.

The engine gets what the user gave; what is stored, logged or shown goes
through :func:`scrub` first (a run's options, command line, engine settings
and details, error messages). One rule, so a field added later is covered
by calling it, not by writing another.

A whole record from elsewhere (a file imported, a bundle exported, submitted
or published) goes through :func:`redact_secrets`: by what a field is, not
where it sits, so an ``api_key`` in a tool's JSON, a token among a bundle's
environment variables and a password in a URL anywhere go alike.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable

MARK = "REDACTED"
# Values that stand for a value in help and messages ("-o KEY=VALUE"): nothing to hide.
# In lower or upper case only: an error saying a line "is not key=number" shows the form it wanted,
# and "nUMBER" is somebody's secret.
_PLACEHOLDERS = {MARK.lower(), "value", "key", "token", "secret", "password", "number", "...", "***"}

# A name (flag, option key, variable) that holds a secret: a part of it, split on
# anything but letters and digits, is one of these words or ends in one of the
# compound ones ("apikey", "hftoken"). "tokens" (--max-num-batched-tokens) is a count.
_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "pass", "passphrase",
          "credential", "credentials", "auth", "authorization", "bearer"}
_ENDINGS = ("apikey", "accesskey", "secretkey", "privatekey", "token", "secret", "password", "passwd")
# A part that names what a key *is* (a model's bos_token_id, a cache key's dtype), not a key.
_NOT_SECRET_AFTER = {"id", "ids", "dtype", "type", "count", "len", "length", "size", "file", "path"}

# scheme://user:password@host -> scheme://host; the user part may hold '@' and ':'.
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#'\"]*@")
# A name and what separates it from its value: NAME=VALUE, "NAME": VALUE, --flag VALUE. Only the
# name is matched, so a secret inside another flag's quoted value (--server-args '--api-key X') is
# still found; the value is read after it (_VALUE) when the name is a secret's.
_NAME = re.compile(r"""(?<![\w.-])(?P<flag>--?)?(?P<name>[A-Za-z_][\w.-]*)['"]?(?P<sep>\s*[=:]\s*|\s+)""")
_VALUE = re.compile(r"""'[^']*'|"[^"]*"|[^\s'",;&|)\]}]+""")
_FLAG = re.compile(r"--?[A-Za-z][\w.-]*")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}")


def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands for a value (``VALUE``, ``number``) rather than being one."""
    return value.lower() in _PLACEHOLDERS and value in (value.lower(), value.upper())


def is_secret_name(name: str) -> bool:
    """Whether a flag, option or variable named ``name`` holds a secret (``--api-key``, ``HF_TOKEN``)."""
    parts = [p for p in re.split(r"[^a-z0-9]+", name.lower()) if p]
    for i, part in enumerate(parts):
        if part in _WORDS or part.endswith(_ENDINGS):
            if not any(later in _NOT_SECRET_AFTER for later in parts[i + 1:]):
                return True
    return False


def scrub_url(url: str) -> str:
    """A URL without its user:password part."""
    return _URL_CREDENTIALS.sub(r"\1", url)


def _secret_spans(text: str):
    """(start, end) of every secret value in ``text``, in order, not overlapping."""
    last = 0
    for match in _NAME.finditer(text):
        if match.start() < last or not is_secret_name(match["name"]):
            continue
        if not match["sep"].strip() and not match["flag"]:
            continue  # "the key file": words, not a flag and its value
        value = _VALUE.match(text, match.end())
        if value is None or (not match["sep"].strip() and value[0].startswith("-")):
            continue
        quoted = value[0][0] in "'\"" and len(value[0]) > 1
        if not is_placeholder(value[0].strip("'\"")):  # a quoted value keeps its quotes (JSON stays JSON)
            yield value.start() + quoted, value.end() - quoted
        last = value.end()


def scrub_text(text: str) -> str:
    """Free text (a command line, an error message) without credentials or secret values."""
    text = _BEARER.sub(lambda m: f"{m[1]} {MARK}", scrub_url(text))
    out, last = [], 0
    for start, end in _secret_spans(text):
        out += [text[last:start], MARK]
        last = end
    return "".join(out) + text[last:]


def scrub_args(argv: Iterable[str]) -> list[str]:
    """A command line as a list: a secret flag's next word is hidden, and every word scrubbed."""
    out, hide = [], False
    for arg in argv:
        if hide and not arg.startswith("--"):
            out.append(MARK)
            hide = False
            continue
        hide = bool(_FLAG.fullmatch(arg)) and is_secret_name(arg)
        out.append(scrub_text(arg))
    return out


def scrub(value: Any) -> Any:
    """A copy of any JSON-like value with every secret hidden: strings scrubbed, and the value of
    any key that names a secret replaced (nested dicts and lists included)."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: MARK if isinstance(k, str) and is_secret_name(k) and value_is_set(v) else scrub(v)
                for k, v in value.items()}
    return value


def value_is_set(value: Any) -> bool:
    return value not in (None, "", False)


def secret_values(argv: Iterable[str]) -> list[str]:
    """The secrets a command line carries (to scrub from a log the command's program writes)."""
    argv = list(argv)
    found = []
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if eq and name.startswith("-") and is_secret_name(name):
            found.append(value)
        elif _FLAG.fullmatch(arg) and is_secret_name(arg) and i + 1 < len(argv):
            found.append(argv[i + 1])
    return [s for s in found if s and s != MARK]


# A record's field that holds a secret when it holds text, by its name's last word (after splitting on
# anything but letters and digits, and between camelCase words): api_key, apiKey, HF_TOKEN, OPENAI_API_KEY,
# client_secret, DB_PASSWORD, Authorization, credentials. Only text is hidden: a figure stays
# (AIPerf's time_to_first_token holds a latency, not a token).
_FIELD_WORDS = {"token", "secret", "password", "passwd", "passphrase", "credential", "credentials",
                "authorization", "auth", "apikey", "bearer", "cookie"}
_FIELD_ENDINGS = ("apikey", "accesskey", "secretkey", "privatekey", "token", "secret", "password", "passwd")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# What scrub_text looks for holds one of these: a URL's user@, NAME=VALUE, NAME: VALUE, a flag and its value.
_MAYBE_SECRET = re.compile(r"[@=:\s]")


@functools.lru_cache(maxsize=4096)  # a record repeats its field names (a sample's, a request's) thousands of times
def is_secret_field(name: str) -> bool:
    """Whether a record's field named ``name`` holds a secret when it holds text: its last word is a
    secret's (``token``, ``secret``, ``password``, ``authorization``, ``credentials``, ``apiKey``...), or
    ``key`` after another word (``api_key``, ``HF_KEY``; a field named just ``key`` names a table's key)."""
    parts = [p for p in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", name).lower()) if p]
    if not parts:
        return False
    last = parts[-1]
    return last in _FIELD_WORDS or (last == "key" and len(parts) > 1) or last.endswith(_FIELD_ENDINGS)


def _text(value: str) -> str:
    if not _MAYBE_SECRET.search(value):
        return value
    scrubbed = scrub_text(value)
    return value if scrubbed == value else scrubbed  # the same object: nothing above it is copied


def _hidden(value: Any, whole: bool) -> Any:
    """What a secret's field holds, hidden: its text, in lists and objects too. Under a ``*token`` name
    (``time_to_first_token``: a latency's figures and their unit) an object's fields go by their own names."""
    if isinstance(value, str):
        return value if not value or is_placeholder(value) else MARK
    if isinstance(value, (list, tuple)):
        return _same_or(value, [_hidden(v, whole) for v in value])
    if isinstance(value, dict) and whole:
        return _same_or(value, {_text(k) if isinstance(k, str) else k: _hidden(v, whole) for k, v in value.items()})
    return redact_secrets(value)


def _same_or(value: Any, new: list | dict) -> Any:
    """``value`` itself where nothing in it changed (a big record is not copied for nothing), else ``new``
    (a tuple stays a tuple)."""
    if isinstance(value, dict):
        if len(new) == len(value) and all(k in value and value[k] is v for k, v in new.items()):
            return value
        return new
    if all(a is b for a, b in zip(value, new)):
        return value
    return tuple(new) if isinstance(value, tuple) else new


def redact_secrets(value: Any) -> Any:
    """A JSON-like value (a run record, a tool's output) with no secret in it, at any depth: the text
    of every field :func:`is_secret_field` names becomes ``REDACTED``; every string, and every field's
    name, loses a URL's ``user:password@`` and a secret flag's or ``NAME=VALUE``'s value
    (:func:`scrub_text`). What changes is a copy and ``value`` is never altered; what holds no secret
    is returned as it is (the same object), so a record without secrets comes back equal to itself
    (and keeps its content id)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, (list, tuple)):
        return _same_or(value, [redact_secrets(v) for v in value])
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                out[key] = redact_secrets(item)
            else:
                out[_text(key)] = (_hidden(item, not key.lower().endswith("token")) if is_secret_field(key)
                                   else redact_secrets(item))
        return _same_or(value, out)
    return value


def secret_fields(value: Any) -> list[str]:
    """Where ``value`` holds what :func:`redact_secrets` hides, as paths (``options.api_key``,
    ``environment.variables.HF_TOKEN``, ``tests[0].error``); named as redacted, so a path shows no secret."""
    found: list[str] = []
    _compare(value, redact_secrets(value), "", found)
    return found


def _compare(was: Any, now: Any, path: str, found: list[str]) -> None:
    if isinstance(was, dict) and isinstance(now, dict) and len(was) == len(now):
        for (key, a), (new_key, b) in zip(was.items(), now.items()):
            name = str(new_key) if str(new_key).isprintable() else ascii(new_key)  # a path is printed
            where = f"{path}.{name}" if path else name
            if key != new_key:
                found.append(where)
            else:
                _compare(a, b, where, found)
    elif isinstance(was, (list, tuple)) and isinstance(now, (list, tuple)) and len(was) == len(now):
        for i, (a, b) in enumerate(zip(was, now)):
            _compare(a, b, f"{path}[{i}]", found)
    elif was != now:
        found.append(path or "(the value)")
