"""Secrets out of everything pdx records: credentials in URLs, and the values of
flags and options that name a key, token, secret or password.

The engine gets what the user gave; what is stored, logged or shown goes
through :func:`scrub` first (a run's options, command line, engine settings
and details, error messages). One rule, so a field added later is covered
by calling it, not by writing another.
"""

from __future__ import annotations

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
