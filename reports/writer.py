"""Writing reports and sites: inside the target only, atomically, only what changed.

A site folder keeps a list of the files pdx wrote (``pdx-site.json``).
Publishing again rewrites a page only when its bytes differ, and removes the
files of the last build that this one no longer makes; files pdx did not
write are never touched. Every write goes through a temporary file in the
same folder, so a reader never sees half a page and nothing lands outside
the target.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path, PurePosixPath

from pdx.errors import PdxError

MANIFEST = "pdx-site.json"


def _failure(path: Path, exc: OSError) -> PdxError:
    reason = exc.strerror or type(exc).__name__
    return PdxError(f"cannot write {path}: {reason}", "choose a folder you can write to")


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".pdx-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_file(path: Path, text: str) -> None:
    """One file (a single-file report); its folder must exist."""
    if not path.parent.is_dir():
        raise PdxError(f"cannot write {path}: folder {path.parent} does not exist", "create it first")
    if path.is_dir():
        raise PdxError(f"cannot write {path}: it is a folder", "give a file name such as report.html")
    try:
        _atomic_write(path, text.encode())
    except OSError as exc:
        raise _failure(path, exc) from None


class SiteWriter:
    """Writes a site into ``root``; call :meth:`finish` once every file is written."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root).expanduser().absolute()
        if self.root.exists() and not self.root.is_dir():
            raise PdxError(f"cannot publish into {self.root}: it is not a folder", "give a folder path")
        if not self.root.parent.is_dir():
            raise PdxError(f"cannot publish into {self.root}: folder {self.root.parent} does not exist",
                           "create it first")
        try:
            self.root.mkdir(exist_ok=True)
            probe = tempfile.NamedTemporaryFile(prefix=".pdx-", dir=self.root)
            probe.close()
        except OSError as exc:
            raise PdxError(f"cannot publish into {self.root}: {exc.strerror or exc}",
                           "choose a folder you can write to") from None
        self.previous = self._read_manifest()
        self.written: set[str] = set()
        self.changed: list[str] = []
        self._dirs: set[Path] = set()

    def _read_manifest(self) -> set[str]:
        try:
            data = json.loads((self.root / MANIFEST).read_text())
            return {f for f in data.get("files", []) if isinstance(f, str)}
        except (OSError, ValueError, AttributeError):
            return set()

    def _target(self, relative: str) -> Path:
        rel = PurePosixPath(relative)
        if rel.is_absolute() or ".." in rel.parts:  # paths are built from slugs; this is a guard
            raise ValueError(f"site path {relative!r} leaves the site folder")
        return self.root.joinpath(*rel.parts)

    def read_previous(self, relative: str) -> str | None:
        """A file the last build wrote (a cached chart), if it is still there."""
        if relative not in self.previous:
            return None
        try:
            return self._target(relative).read_text()
        except (OSError, UnicodeDecodeError):
            return None

    def write(self, relative: str, content: str | bytes) -> None:
        data = content.encode() if isinstance(content, str) else content
        path = self._target(relative)
        if relative in self.written:  # two pages with one name: a slug bug, never silently overwritten
            raise RuntimeError(f"site file {relative} written twice in one build")
        self.written.add(relative)
        try:
            if path.parent not in self._dirs:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._dirs.add(path.parent)
            try:
                if path.stat().st_size == len(data) and path.read_bytes() == data:
                    return  # unchanged: keep the file, and its time stamp
            except FileNotFoundError:
                # A new file: no reader can hold an older copy, so it is written in place.
                path.write_bytes(data)
            else:
                _atomic_write(path, data)
            self.changed.append(relative)
        except OSError as exc:
            raise _failure(path, exc) from None

    def finish(self, about: dict) -> list[str]:
        """Remove what the last build wrote and this one did not; record this build's files."""
        stale = sorted(self.previous - self.written - {MANIFEST})
        for relative in stale:
            path = self._target(relative)
            path.unlink(missing_ok=True)
            parent = path.parent
            while parent != self.root and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        manifest = {**about, "files": sorted(self.written)}
        self.write(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        return stale
