"""Errors a user can act on.

Every failure that is the user's to fix (a bad path, an unknown backend, an
engine that is not installed) is a :class:`PdxError`. The CLI prints its
message as one line and exits non-zero; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations


class PdxError(Exception):
    """A problem the user can fix; ``str(err)`` is a one-line message."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if not hint else f"{message}; {hint}")


class BackendUnavailable(PdxError):
    """The engine behind a backend is missing or cannot load."""


class RegistryError(PdxError):
    """The registry cannot be opened or written."""


class ModelError(PdxError):
    """A model file that cannot be used."""


class WorkloadError(PdxError):
    """A test specification that cannot be parsed."""


class ImportFileError(PdxError):
    """A file that cannot be imported (malformed, truncated, oversized); nothing was stored."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP to pdx (a CI runner's timeout, a closed terminal, `kill`), raised where the
    program is, so that it unwinds as from Ctrl-C: the tests measured stay stored, the run is marked
    interrupted, and a server pdx started is stopped rather than left running."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def interruption(exc: KeyboardInterrupt) -> str:
    """What a stored run says of an interruption."""
    return str(exc) or "interrupted by the user"
