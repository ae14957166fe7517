"""Redaction for bundles shared outside a team: secrets, host names, addresses and file paths.

Every string in a record is rewritten, wherever it sits (command lines,
engine details, error messages, llama-bench's own records...), so a field
added later is covered too:

- secrets go first, by what a field is wherever it sits (:func:`pdx.base.secrets.redact_secrets`:
  an ``api_key`` or ``*_TOKEN`` field's text, a URL's ``user:password@``, a secret flag's value);
- a URL keeps its scheme, port and path but not its host, unless the host is
  one of the public sources pdx's own hardware catalog cites;
- the machine's host name (any case, with any domain after it), every host
  named by a URL elsewhere in the record, and every IPv4 and IPv6 address
  become ``<redacted-host>``;
- an absolute path (POSIX, ``~/``, Windows ``C:\\``, UNC ``\\\\host\\share``) keeps only
  its file name: ``/home/ann/models/m.gguf`` becomes ``<redacted>/m.gguf``.

Numbers and keys are left alone.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from pathlib import Path
from typing import Any, Iterator, Mapping

import pdx
from pdx.base.secrets import MARK, redact_secrets, scrub_text

PATH_MARK = "<redacted>"
HOST_MARK = "<redacted-host>"
CATALOG = Path(pdx.__file__).parent / "domain" / "hardware" / "catalog.json"  # read as text: no hardware import

_URL = re.compile(r"(?i)\b(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<host>\[[^\]\s]*\]|[^\s/?#:'\"\[\]<>`|;,)}]*)"
                  r"(?P<rest>[^\s'\"<>`|;,)}]*)")
# Where a path may start: the start of the text, or after a separator (space, quote, = : , ( [
# ; | ` { > <); "/b8" inside "pp512/b8" is not one.
_BEFORE = r"""(?:(?<=^)|(?<=[\s=:'",(\[;|`{<>]))"""
_PATH_BODY = r"""[^\s'",)\]}`;|<>]*"""
# A path already redacted ("<redacted>/m.gguf"), and a redacted URL's own path ("http://<redacted-host>/v1"),
# are left as they are: redacting twice changes nothing.
_PATH = re.compile(r"(?<!<redacted>)(?<!<redacted-host>)" + _BEFORE
                   + r"(?:\\\\[^\s\\'\"]+|~[\w.-]*(?=/|$)|/|[A-Za-z]:[\\/])" + _PATH_BODY)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.%])\[?(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f.]*(?:%[\w.-]+)?\]?(?![\w:])")
# user@host.domain (an e-mail address, an ssh target); "tg128@d4096" has no domain and is a test name.
_USER_AT_HOST = re.compile(r"(?<![\w.+-])[\w.+-]+@(?=[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?![\w@]))")


@functools.cache
def public_hosts() -> frozenset[str]:
    """The hosts of the sources pdx's hardware catalog cites: public pages, kept in a redacted record."""
    try:
        text = CATALOG.read_text()
    except OSError:
        return frozenset()
    return frozenset(h.lower() for h in re.findall(r"https?://([^/\"\s:]+)", text))


def _is_public(host: str) -> bool:
    return host.lower() in public_hosts()


def _url(match: re.Match[str]) -> str:
    whole: str = match[0]  # every group takes part in a match: each is a str
    scheme: str = match["scheme"]
    host: str = match["host"]
    rest: str = match["rest"]
    if scheme.lower() == "file://":
        return scheme + _PATH.sub(_path, rest if rest.startswith("/") else "/" + rest)
    if not host or _is_public(host):
        return whole
    return scheme + HOST_MARK + rest


def _path(match: re.Match[str]) -> str:
    text = match.group(0).rstrip("/\\")
    name = re.split(r"[/\\]", text)[-1]
    if name.startswith("~") or (len(name) == 2 and name[1] == ":"):
        name = ""
    return f"{PATH_MARK}/{name}" if name else PATH_MARK


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]").split("%")[0])
    except ValueError:
        return False
    return True


def _address(match: re.Match[str]) -> str:
    found: str = match[0]
    return HOST_MARK if _is_address(found) else found


def _plain(text: str, hosts: re.Pattern[str] | None) -> str:
    """Text outside URLs: host names, addresses, then paths."""
    text = _USER_AT_HOST.sub(f"{PATH_MARK}@", text)
    if hosts is not None:
        text = hosts.sub(HOST_MARK, text)
    text = _IPV6.sub(_address, _IPV4.sub(_address, text))
    return _PATH.sub(_path, text)


def redact_text(text: str, hosts: re.Pattern[str] | None = None) -> str:
    text = scrub_text(text)
    out: list[str] = []
    last = 0
    for match in _URL.finditer(text):
        out += [_plain(text[last:match.start()], hosts), _url(match)]
        last = match.end()
    return "".join(out) + _plain(text[last:], hosts)


def _walk(value: Any, hosts: re.Pattern[str] | None) -> Any:  # JSON in, the same shape out
    if isinstance(value, str):
        return redact_text(value, hosts)
    if isinstance(value, list):
        return [_walk(v, hosts) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, hosts) for k, v in value.items()}
    return value


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def host_names(record: Mapping[str, Any]) -> set[str]:
    """The names to remove wherever they appear: the machine's own (and its first label), and
    every host a URL in the record names that is not a public source."""
    names: set[str] = set()
    hosts = [(record.get("environment") or {}).get("hostname")]
    hosts += [client.get("host") for client in _clients(record)]  # serve-bench --clients: where each ran
    for host in hosts:
        if isinstance(host, str) and host:
            names |= {host, host.split(".")[0]}
    for text in _strings(record):
        for match in _URL.finditer(text):
            found = match["host"].strip("[]")
            if found and not _is_public(found):
                names.add(found)
                if not _is_address(found):
                    names.add(found.split(".")[0])
    # A very short name ("vm") would match inside ordinary words: only the field itself goes then.
    return {n for n in names if len(n) >= 3}


def _clients(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The client shards of a record's serving samples (``engine.clients``), each naming its host."""
    return [client for test in record.get("tests") or [] for sample in test.get("samples") or []
            for client in ((sample.get("engine") or {}).get("clients") or []) if isinstance(client, dict)]


def _host_pattern(names: set[str]) -> re.Pattern[str] | None:
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    # The name in any case, with the rest of a fully qualified name after it.
    return re.compile(rf"(?i)(?<![\w-])(?:{alternatives})(?:\.[a-z0-9-]+)*(?![\w-])")


def redact_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a run record without secrets, host names, addresses or file paths (ids and hashes are kept).
    Redacting it again changes nothing (what one pass uncovers, as a user@ a URL hid, the next removes), so
    what `pdx submit` writes `pdx hub verify` finds nothing private in."""
    redacted = _redact_once(record)
    for _ in range(16):  # one pass a layer: text run together ("v1http://...") may hide a few
        again = _redact_once(redacted)
        if again == redacted:
            break
        redacted = again
    return redacted


def _redact_once(record: Mapping[str, Any]) -> dict[str, Any]:
    record = redact_secrets(record)  # before the host names are read: "user:pw@host" names no host "user"
    redacted: dict[str, Any] = _walk(record, _host_pattern(host_names(record)))
    if (record.get("environment") or {}).get("hostname"):
        redacted["environment"]["hostname"] = HOST_MARK
    for client in _clients(redacted):  # a short name ("vm") is left by the pattern: the field itself goes
        if client.get("host"):
            client["host"] = HOST_MARK
    return redacted


# The kinds of private text a shared run may not hold: the one list redaction removes (redact_record),
# `pdx hub verify` refuses (private_fields), `pdx submit` reports removing and docs/hub.md's threat
# model names. A kind is told by the mark redaction leaves in its place.
PRIVATE_KINDS: dict[str, str] = {
    "secret": "a key, token or password",
    "user": "a user name (user@host)",
    "host": "a host name or network address",
    "path": "a file path (a folder's names, a home folder's user)",
}


def _kind(was: str, now: str) -> str:
    if now.count(MARK) > was.count(MARK):
        return "secret"
    if now.count(f"{PATH_MARK}@") > was.count(f"{PATH_MARK}@"):
        return "user"
    if now.count(HOST_MARK) > was.count(HOST_MARK):
        return "host"
    return "path"


def private_fields(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where ``record`` holds private text redaction would remove: (field path, kind of
    :data:`PRIVATE_KINDS`), in record order; empty for a redacted record (redacting is idempotent)."""
    found: list[tuple[str, str]] = []
    _differences(record, redact_record(record), "", found)
    return found


def _differences(was: object, now: object, path: str, found: list[tuple[str, str]]) -> None:
    if isinstance(was, dict) and isinstance(now, dict) and len(was) == len(now):
        for (key, a), (new_key, b) in zip(was.items(), now.items()):
            name = str(new_key) if str(new_key).isprintable() else ascii(new_key)  # a path is printed
            where = f"{path}.{name}" if path else name
            if key != new_key:
                found.append((where, _kind(str(key), str(new_key))))
            else:
                _differences(a, b, where, found)
    elif isinstance(was, list) and isinstance(now, list) and len(was) == len(now):
        for i, (a, b) in enumerate(zip(was, now)):
            _differences(a, b, f"{path}[{i}]", found)
    elif was != now:
        found.append((path or "(the value)", _kind(str(was), str(now))))


def describe_private(found: list[tuple[str, str]], limit: int = 10) -> str:
    """``environment.hostname (host), model.path (path)``: what :func:`private_fields` found, in one line."""
    listed = ", ".join(f"{where} ({kind})" for where, kind in found[:limit])
    return listed + (f" and {len(found) - limit} more" if len(found) > limit else "")
