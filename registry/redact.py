"""Redaction for bundles shared outside a team: host names and file paths.

Every string in a record is rewritten, wherever it sits (command lines,
engine details, llama-bench's own records...), so a field added later is
covered too: an absolute path keeps only its file name
(``/home/ann/models/m.gguf`` becomes ``<redacted>/m.gguf``) and the host
name becomes ``<redacted-host>`` (in the manifest, and wherever else it
appears if it is 3 characters or more). Numbers and keys are left alone.
"""

from __future__ import annotations

import re

PATH_MARK = "<redacted>"
HOST_MARK = "<redacted-host>"
# An absolute POSIX or Windows path, at the start of a string or after a
# separator (space, =, quote, comma, colon): "/b8" inside "pp512/b8" is not one.
_PATH = re.compile(r"""(?:(?<=^)|(?<=[\s=:'",(\[]))(?:/|[A-Za-z]:\\)[^\s'",)\]]*""")


def _path(match: re.Match) -> str:
    text = match.group(0).rstrip("/\\")
    name = re.split(r"[/\\]", text)[-1]
    return f"{PATH_MARK}/{name}" if name else PATH_MARK


def redact_text(text: str, hosts: set[str]) -> str:
    for host in hosts:
        text = text.replace(host, HOST_MARK)
    return _PATH.sub(_path, text)


def _walk(value, hosts: set[str]):
    if isinstance(value, str):
        return redact_text(value, hosts)
    if isinstance(value, list):
        return [_walk(v, hosts) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, hosts) for k, v in value.items()}
    return value


def redact_record(record: dict) -> dict:
    """A copy of a run record without host names or file paths (ids and hashes are kept)."""
    host = (record.get("environment") or {}).get("hostname")
    # A very short name ("vm") would match inside ordinary words: only the field itself goes then.
    hosts = {host} if isinstance(host, str) and len(host) >= 3 else set()
    redacted = _walk(record, hosts)
    if host:
        redacted["environment"]["hostname"] = HOST_MARK
    return redacted
