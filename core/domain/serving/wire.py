"""The bytes on the wire: where requests go, what a request looks like, and TLS
done over memory buffers (so reads can still go through ``recvmsg`` and keep
the kernel's receive timestamps)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from pdx.contract.errors import PdxError

READ_SIZE = 65536


@dataclass(frozen=True)
class Target:
    """Where requests go: ``http(s)://host:port`` plus a path prefix."""

    scheme: str
    host: str
    port: int
    prefix: str = ""

    @classmethod
    def parse(cls, url: str) -> "Target":
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PdxError(f"--url {url}: not an http(s) URL", "give e.g. http://127.0.0.1:8000")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise PdxError(f"--url {url}: the port is not a number") from None
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{self.prefix}"


class Tls:
    """TLS over memory buffers, so reads can still go through ``recvmsg``."""

    def __init__(self, host: str, request: bytes) -> None:
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ssl.create_default_context().wrap_bio(self.incoming, self.outgoing, server_hostname=host)
        self.request = request
        self.ready = False

    def to_send(self) -> bytes:
        """Advance the handshake (then hand over the request); the raw bytes to send."""
        if not self.ready:
            try:
                self.obj.do_handshake()
                self.ready = True
            except ssl.SSLWantReadError:
                pass
        if self.ready and self.request:
            self.obj.write(self.request)
            self.request = b""
        return self.outgoing.read()

    def received(self, raw: bytes) -> tuple[bytes, bool]:
        """Decrypt what arrived: (plain bytes, whether the peer closed the TLS session)."""
        self.incoming.write(raw)
        if not self.ready:
            return b"", False
        out = []
        while True:
            try:
                chunk = self.obj.read(READ_SIZE)
            except ssl.SSLWantReadError:
                return b"".join(out), False
            except ssl.SSLZeroReturnError:
                return b"".join(out), True
            if not chunk:  # a ragged end: the peer closed without close_notify
                return b"".join(out), True
            out.append(chunk)


def http_request(method: str, target: Target, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    """The bytes of one HTTP/1.1 request that closes its connection when answered."""
    lines = [f"{method} {target.prefix}{path} HTTP/1.1", f"Host: {target.host}:{target.port}",
             f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
