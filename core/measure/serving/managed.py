"""A server process pdx starts, waits for, and stops: ``vllm serve``, ``llama-server``.

Started in its own session (process group), its output going to a log file
that is kept with the run; healthy once ``GET /health`` answers 200; stopped
with SIGINT to the server (graceful: it stops its own workers), then SIGTERM
and SIGKILL to the group. pdx stopped by a signal stops it the same way (the
CLI turns SIGTERM and SIGHUP into an interruption); on Linux a pdx killed
outright takes it along too (the kernel sends it SIGKILL).
A port already in use and a server that exits or never becomes healthy are
one-line errors naming the log.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from pdx.contract.errors import PdxError

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_in_use(port: int, host: str = HOST) -> bool:
    """Whether something listens there (connections of a stopped server waiting out TIME_WAIT do not count,
    as servers bind with SO_REUSEADDR)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def last_line(log: Path, skip: tuple[str, ...] = ()) -> str:
    """The last informative line of a log (for one-line errors)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    for line in reversed(lines):
        text = line.strip()
        if text and not any(s in text for s in skip):
            return text[-300:]
    return "the log is empty"


_PR_SET_PDEATHSIG = 1


def _child_setup():
    """What the child does before exec. A pdx started as a background job (`pdx ... &` in a script, a
    CI runner) has SIGINT ignored, which its children would inherit, and pdx stops a server with
    SIGINT: the default comes back. On Linux the server is sent SIGKILL when pdx dies, however it
    dies, so no server outlives the benchmark that started it. SIGKILL, not SIGTERM: with pdx gone
    nobody waits on a graceful stop, and llama-server's can hang for good once its streaming client
    vanished mid-request (seen under load: the server ran on, idle, until a second signal)."""
    reset_sigint = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None  # loaded before fork

    def setup() -> None:
        if reset_sigint:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        if libc is not None:
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return setup


class ManagedServer:
    def __init__(self, name: str, command: Sequence[str], port: int, log: Path, env: dict | None = None,
                 startup_timeout_s: float = 900.0, secrets: Sequence[str] = ()) -> None:
        self.name, self.command, self.port, self.log = name, list(command), port, Path(log)
        self.env = env
        self.startup_timeout_s = startup_timeout_s
        self.secrets = [s for s in secrets if s]
        self.proc: subprocess.Popen | None = None
        self.url = f"http://{HOST}:{port}"

    def start(self) -> None:
        if port_in_use(self.port):
            raise PdxError(f"port {self.port} on {HOST} is already in use",
                           "stop what listens there or choose another port with -o port=N")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            try:
                self.proc = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=self.env, start_new_session=True,
                                             preexec_fn=_child_setup())
            except OSError as exc:
                raise PdxError(f"cannot start {self.name}: {exc.strerror or exc}") from None
        self.wait_healthy()

    def wait_healthy(self) -> None:
        import requests  # here, not at the top: every start of pdx registers the server backends

        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                self.scrub_log()
                raise PdxError(f"{self.name} exited with code {code} before it became healthy: "
                               f"{last_line(self.log)}", f"see its log {self.log}")
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        self.stop()
        raise PdxError(f"{self.name} did not become healthy within {self.startup_timeout_s:.0f} s",
                       f"see its log {self.log}, or raise -o startup_timeout=SECONDS")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float = 30.0) -> int | None:
        """SIGINT to the server alone (it shuts its workers down), then SIGTERM and SIGKILL
        to the whole process group pdx created; returns the server's exit code."""
        if self.proc is None:
            return None
        steps = ((lambda sig: os.kill(self.proc.pid, sig), signal.SIGINT, grace_s),
                 (lambda sig: os.killpg(self.proc.pid, sig), signal.SIGTERM, 10.0),
                 (lambda sig: os.killpg(self.proc.pid, sig), signal.SIGKILL, 10.0))
        for send, sig, wait in steps:
            if self.proc.poll() is not None:
                break
            try:
                send(sig)
                self.proc.wait(timeout=wait)
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        try:  # workers left behind by a server that died first
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.scrub_log()
        return self.proc.returncode

    def scrub_log(self) -> None:
        """Secrets (an API key) never stay in a kept log."""
        if not self.secrets or not self.log.exists():
            return
        text = self.log.read_text(errors="replace")
        cleaned = text
        for secret in self.secrets:
            cleaned = cleaned.replace(secret, "***")
        if cleaned != text:
            self.log.write_text(cleaned)
