"""Files a user names: what pdx writes there (``-o``) and what it reads from there (``pdx import``).

A path to write is a new name or a regular file, nothing else: a write goes through a temporary
file renamed over the target, which would put a regular file in the place of ``/dev/null`` (as
root), a named pipe or a socket. A file to read is opened without blocking and refused unless it
is a regular file, so a named pipe that nobody writes to cannot hold pdx for ever, and opening a
device does nothing. Every failure is one line (:class:`~pdx.contract.errors.PdxError`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

from pdx.contract.errors import PdxError

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"))


class NotRegularFile(OSError):
    """A path that is there but is no regular file (a device, a named pipe, a socket, a folder)."""

    def __init__(self, path: str | os.PathLike, mode: int) -> None:
        super().__init__(errno.EINVAL, f"it is {kind(mode)}, not a regular file", str(path))


def kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words."""
    return next((words for test, words in _KINDS if test(mode)), "no regular file")


def reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def output_path(path: str | os.PathLike) -> Path:
    """``path`` as a place to write one file: a new name in a folder that exists, or a regular file
    (through a symbolic link too). Anything else is refused in one line, before anything is written."""
    path = Path(path)
    shown = str(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        parent = path.parent
        if not parent.is_dir():
            raise PdxError(f"cannot write {shown}: folder {parent} does not exist", "create it first") from None
        return path
    except OSError as exc:  # a name too long, a part of the path that is a file, no permission
        hint = "give a shorter file name" if exc.errno == errno.ENAMETOOLONG else None
        raise PdxError(f"cannot write {shown}: {reason(exc)}", hint) from None
    if stat.S_ISDIR(mode):
        raise PdxError(f"cannot write {shown}: it is a folder", "give a file name in it")
    if not stat.S_ISREG(mode):
        raise PdxError(f"cannot write {shown}: it is {kind(mode)}, and pdx writes only regular files",
                       "give the name of a new or a regular file")
    return path


def output_folder(path: str | os.PathLike, action: str = "cannot write into", make: bool = False) -> Path:
    """``path`` as a folder to write files into: a folder, or a new name (made, with the folders above
    it, where ``make``). A file, a device or a name too long is refused in one line: "{action} {path}: ..."."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if make:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise PdxError(f"{action} {path}: {reason(exc)}", "give a folder you can write to") from None
        return path
    except OSError as exc:
        hint = "give a shorter name" if exc.errno == errno.ENAMETOOLONG else None
        raise PdxError(f"{action} {path}: {reason(exc)}", hint) from None
    if not stat.S_ISDIR(mode):
        raise PdxError(f"{action} {path}: it is not a folder but {'a file' if stat.S_ISREG(mode) else kind(mode)}",
                       "give a folder path")
    return path


def write_atomically(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` (checked by :func:`output_path`) through a temporary file in the same
    folder, so a reader never sees half of it and a failure (a full disk) leaves what was there."""
    path = output_path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".pdx-", dir=path.parent)
    except OSError as exc:
        raise PdxError(f"cannot write {path}: {reason(exc)}", "choose a folder you can write to") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise PdxError(f"cannot write {path}: {reason(exc)}", "nothing was written; free space or choose "
                       "another place") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_stdout(text: str) -> None:
    """Print ``text`` whole to standard output; a stream that takes no more (a full disk, a closed
    pipe) is one line, and the rest of the text is dropped rather than tried again at exit."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        _drop_stdout()
        raise PdxError(f"cannot write to standard output: {reason(exc)}") from None


def _drop_stdout() -> None:
    """Point standard output at the null device, so the interpreter's last flush has nowhere to fail."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError, AttributeError):  # no file descriptor behind it (a test's StringIO)
        pass


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """``path`` opened to read, only if it is a regular file: a device, a named pipe or a socket is
    refused (:class:`NotRegularFile`, an OSError) before it is opened, and again after (a file swapped
    in between is opened without blocking and without becoming a controlling terminal)."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, mode)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit`` + 1 of them, where a limit is given)."""
    with open_regular(path) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def sha256_of(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read in chunks (hashlib.file_digest is Python 3.11's)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()
