"""Many streamed HTTP/1.1 requests on one thread, timed by the kernel.

Why not ``requests`` and a thread per stream: at 256 concurrent streams on
2 cores, a thread that wakes up for its token waits for the GIL behind the
others (up to the 5 ms switch interval), and the delay lands in ITL. asyncio
has the same problem in another form: a callback stamps the time when its
turn comes, after every earlier ready socket was parsed.

So: one selector loop over non-blocking sockets, and every read asks the
kernel when the bytes arrived (``SO_TIMESTAMPNS``: the receive time of the
segment, taken before any Python runs). A busy client then costs CPU but not
accuracy. Where the kernel gives no stamp (not Linux), the time the selector
woke up is used, still before any parsing. All times are
``time.perf_counter_ns()`` (CLOCK_MONOTONIC on Linux); kernel stamps
(CLOCK_REALTIME) are converted with an offset read at each wake-up.

``requests`` stays the tool for the plain calls (health, /metrics, models).
"""

from __future__ import annotations

import errno
import heapq
import itertools
import os
import selectors
import socket
import struct
import sys
import time
from typing import Callable, Protocol

from pdx.contract.errors import PdxError
from pdx.domain.serving.wire import READ_SIZE, Target, Tls

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35) if sys.platform.startswith("linux") else None
_ANCILLARY = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 0
_MAX_BODY = 65536  # of a non-streamed (error) body kept for the message


class Handler(Protocol):
    def on_response(self, status: int, headers: dict[str, str], streamed: bool) -> None:
        """The status line and headers; ``streamed``: a 200 answered with an SSE event stream."""

    def on_event(self, data: str, t_ns: int) -> bool:
        """One SSE event's data, stamped with its arrival; True ends the stream."""

    def on_end(self, t_ns: int, error: str | None, body: str) -> None:
        """The stream is over: ``error`` for a transport failure, ``body`` for a non-SSE response."""


class Stream:
    """One request: connect, send, read the response, cut it into SSE events."""

    def __init__(self, loop: "StreamLoop", target: Target, request: bytes, handler: Handler,
                 timeout_s: float | None) -> None:
        self.loop, self.target, self.handler = loop, target, handler
        self.started_ns = time.perf_counter_ns()
        self.deadline_ns = self.started_ns + int(timeout_s * 1e9) if timeout_s else None
        self.tls = Tls(target.host, request) if target.scheme == "https" else None
        self.pending = b"" if self.tls else request  # raw bytes still to send
        self.connecting = True
        self.closed = False
        self.buffer = b""  # response bytes not yet consumed
        self.status: int | None = None
        self.sse = False
        self.chunked = False
        self.left: int | None = None  # bytes left: of the current chunk, or of a Content-Length body
        self.body = bytearray()  # a non-SSE body (errors), kept for the message
        self.lines = b""  # SSE text not yet cut into lines
        self.data: list[str] = []  # data lines of the event being read
        family, address = loop.resolve(target)
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if SO_TIMESTAMPNS is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        loop.selector.register(self.sock, selectors.EVENT_WRITE, self)
        loop.streams.add(self)
        code = self.sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS):
            self._close(self.started_ns, f"cannot connect to {target.url}: {os.strerror(code)}")

    # -- called by the loop ----------------------------------------------------

    def writable(self, now_ns: int) -> None:
        if self.connecting:
            code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                self._close(now_ns, f"cannot connect to {self.target.url}: {os.strerror(code)}")
                return
            self.connecting = False
            if self.tls:
                self.pending += self.tls.to_send()
        self._flush(now_ns)

    def readable(self, wake_ns: int, offset_ns: int) -> None:
        while not self.closed:
            try:
                raw, ancillary, _, _ = self.sock.recvmsg(READ_SIZE, _ANCILLARY)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self._close(wake_ns, f"connection to {self.target.url} failed: {exc.strerror or exc}")
                return
            t_ns = wake_ns
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                    sec, nsec = struct.unpack("qq", data[:16])
                    t_ns = sec * 1_000_000_000 + nsec - offset_ns
            if self.deadline_ns and t_ns > self.deadline_ns:
                # Judged by arrival time, so a client that was descheduled past the deadline still agrees.
                self.expire(self.deadline_ns)
                return
            closed = not raw
            if self.tls and raw:
                raw, closed = self.tls.received(raw)
                reply = self.tls.to_send()
                if reply:
                    self.pending += reply
                    self._flush(wake_ns)
            if raw:
                self._feed(raw, t_ns)
            if closed and not self.closed:
                self._eof(t_ns)

    def expire(self, now_ns: int) -> None:
        self._close(now_ns, f"timed out after {(now_ns - self.started_ns) / 1e9:.1f} s")

    def cancel(self, now_ns: int, why: str) -> None:
        self._close(now_ns, why)

    def _flush(self, now_ns: int) -> None:
        try:
            sent = self.sock.send(self.pending) if self.pending else 0
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._close(now_ns, f"sending to {self.target.url} failed: {exc.strerror or exc}")
            return
        self.pending = self.pending[sent:]
        want = selectors.EVENT_WRITE if self.pending else selectors.EVENT_READ
        if self.loop.selector.get_key(self.sock).events != want:
            self.loop.selector.modify(self.sock, want, self)

    # -- HTTP/1.1 framing --------------------------------------------------------

    def _feed(self, raw: bytes, t_ns: int) -> None:
        self.buffer += raw
        if self.status is None and not self._headers(t_ns):
            return
        while self.buffer and not self.closed:
            if self.chunked and self.left is None:  # at a chunk-size line
                line, sep, rest = self.buffer.partition(b"\r\n")
                if not sep:
                    return
                if not line:  # the CRLF that ends the previous chunk
                    self.buffer = rest
                    continue
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    self._close(t_ns, f"malformed chunked encoding from {self.target.url}: {line[:40]!r}")
                    return
                if size == 0:
                    self._close(t_ns, None)
                    return
                self.buffer, self.left = rest, size
                continue
            piece = self.buffer if self.left is None else self.buffer[: self.left]
            self.buffer = self.buffer[len(piece):]
            if self.left is not None:
                self.left -= len(piece)
            self._content(piece, t_ns)
            if self.left == 0:
                self.left = None
                if not self.chunked:
                    self._close(t_ns, None)

    def _headers(self, t_ns: int) -> bool:
        head, sep, rest = self.buffer.partition(b"\r\n\r\n")
        if not sep:
            return False
        lines = head.decode("latin-1").split("\r\n")
        try:
            self.status = int(lines[0].split()[1])
        except (IndexError, ValueError):
            self._close(t_ns, f"not an HTTP response from {self.target.url}: {lines[0][:60]!r}")
            return False
        headers = {}
        for line in lines[1:]:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if not self.chunked and headers.get("content-length", "").isdigit():
            self.left = int(headers["content-length"])
        self.sse = self.status == 200 and headers.get("content-type", "").startswith("text/event-stream")
        self.buffer = rest
        self.handler.on_response(self.status, headers, self.sse)
        if self.left == 0:
            self._close(t_ns, None)
        return not self.closed

    def _content(self, piece: bytes, t_ns: int) -> None:
        if not self.sse:
            if len(self.body) < _MAX_BODY:
                self.body += piece
            return
        self.lines += piece
        *complete, self.lines = self.lines.split(b"\n")
        for raw_line in complete:
            line = raw_line.rstrip(b"\r").decode("utf-8", errors="replace")
            if line.startswith("data:"):
                self.data.append(line[6:] if line.startswith("data: ") else line[5:])
            elif not line and self.data:
                event, self.data = "\n".join(self.data), []
                if self.handler.on_event(event, t_ns):
                    self._close(t_ns, None)
                    return

    def _eof(self, t_ns: int) -> None:
        if self.status is None:
            self._close(t_ns, f"{self.target.url} closed the connection before answering")
        elif self.chunked or self.left:
            self._close(t_ns, f"{self.target.url} closed the connection mid-response")
        else:
            self._close(t_ns, None)

    def _close(self, t_ns: int, error: str | None) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.loop.selector.unregister(self.sock)
        except (KeyError, ValueError):
            pass
        self.sock.close()
        self.loop.streams.discard(self)
        self.handler.on_end(t_ns, error, bytes(self.body).decode("utf-8", errors="replace"))


class StreamLoop:
    """The selector loop: streams, timers, and the clock offset for kernel stamps."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.streams: set[Stream] = set()
        self._timers: list[tuple[int, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._addresses: dict[Target, tuple] = {}
        self.lateness: list[int] = []  # how late each timer ran (ns): the loop's own lag, a client at its limit

    def resolve(self, target: Target) -> tuple:
        if target not in self._addresses:
            try:
                family, _, _, _, address = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)[0]
            except socket.gaierror as exc:
                raise PdxError(f"cannot resolve {target.host}: {exc.strerror}", "check --url") from None
            self._addresses[target] = (family, address)
        return self._addresses[target]

    def open(self, target: Target, request: bytes, handler: Handler, timeout_s: float | None = None) -> Stream:
        return Stream(self, target, request, handler, timeout_s)

    def call_at(self, t_ns: int, callback: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (t_ns, next(self._order), callback))

    def run(self, done: Callable[[], bool]) -> None:
        """Serve streams and timers until ``done()`` is true and nothing is left."""
        while not (done() and not self.streams and not self._timers):
            now = time.perf_counter_ns()
            wake = [t for t, _, _ in self._timers[:1]] + [s.deadline_ns for s in self.streams if s.deadline_ns]
            timeout = max(0.0, (min(wake) - now) / 1e9) if wake else (None if self.streams else 0.0)
            if self.streams:
                ready = self.selector.select(timeout)
            else:
                ready = []
                if timeout:
                    time.sleep(timeout)
            wake_ns = time.perf_counter_ns()
            offset_ns = time.time_ns() - wake_ns
            for key, mask in ready:
                stream: Stream = key.data
                if mask & selectors.EVENT_WRITE:
                    stream.writable(wake_ns)
                elif mask & selectors.EVENT_READ:
                    stream.readable(wake_ns, offset_ns)
            now = time.perf_counter_ns()
            for stream in [s for s in self.streams if s.deadline_ns and s.deadline_ns <= now]:
                stream.expire(stream.deadline_ns)  # when it timed out, however late this loop woke to see it
            while self._timers and self._timers[0][0] <= now:
                due, _, callback = heapq.heappop(self._timers)
                self.lateness.append(time.perf_counter_ns() - due)
                callback()
            if not self.streams and not self._timers and not done():
                raise RuntimeError("the stream loop has nothing left to do but is not done")

    def cancel_all(self, why: str) -> None:
        now = time.perf_counter_ns()
        for stream in list(self.streams):
            stream.cancel(now, why)
        self._timers.clear()

    def close(self) -> None:
        self.cancel_all("cancelled")
        self.selector.close()
