"""Writing reports and sites: inside the target only, atomically, only what changed.

A site folder keeps a list of the files pdx wrote and the SHA-256 of each
(``pdx-site.json``). Publishing again rewrites a page only when its bytes
differ, and removes the files of the last build that this one no longer
makes; a file is pdx's to replace or remove only while it still holds the
bytes the manifest records, so a planted or edited manifest cannot make
publish touch a file pdx never wrote. Every write goes through a temporary
file in the same folder, so a reader never sees half a page; no write or
removal goes through a symbolic link or lands outside the folder; a folder
that is not empty and holds no manifest is not pdx's, and neither ``/`` nor
the home folder is ever one. One publish at a time holds the folder (a lock
on it), so two at once leave one complete site and one line of error.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pdx.contract.errors import PdxError
from pdx.base.files import output_folder, read_regular, write_atomically

MANIFEST = "pdx-site.json"
# Each file a build is about to write, a line "relative<TAB>sha256" put here first: a build stopped
# where it could not record its manifest (killed, or on a full disk) leaves what it wrote known to the
# next, which takes those files as pdx's (each only while it holds those bytes) and removes the journal
# once a manifest records them. A ".pdx-" name, so a folder holding only it counts as empty.
JOURNAL = ".pdx-journal"
MANIFEST_FORMAT = 2  # files: {relative path: sha256}; format 1 listed names only
DEFAULT_TITLE = "pdx results"  # a new site's, where no --title names it
MAX_TITLE = 500  # characters of a title read back from a manifest


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _failure(path: str | os.PathLike[str], exc: OSError) -> PdxError:
    reason = exc.strerror or type(exc).__name__
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return PdxError(f"cannot write {path}: {reason}",
                        "free some space and publish again: it takes up where this one stopped")
    return PdxError(f"cannot write {path}: {reason}", "choose a folder you can write to")


def _read_bytes(path: str | Path) -> bytes:
    # A named pipe or a device planted where a page was is no page of pdx's; reading it could block.
    return read_regular(path)


def _atomic_write(path: str | Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".pdx-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _exclusive_write(path: str | Path, data: bytes) -> None:
    try:
        with open(path, "xb") as fh:
            fh.write(data)
    except FileExistsError:
        raise
    except BaseException:  # half a file (a full disk): this write made it, so it goes
        Path(path).unlink(missing_ok=True)
        raise


def _exclusive_move(staged: str, path: str) -> None:
    os.link(staged, path)  # fails where a file is: nothing another writer made is replaced
    os.unlink(staged)


def _vanished(path: str) -> None:
    raise PdxError(f"{path} was removed while the site was being built", "publish again")


def _holds(root: str, previous: dict, relative: str, digest: str) -> bool:
    """Whether the last build wrote ``relative`` with ``digest`` and the file still holds those bytes."""
    if previous.get(relative) != digest:
        return False
    target = os.path.join(root, *PurePosixPath(relative).parts)
    try:
        return not os.path.islink(target) and _digest(_read_bytes(target)) == digest
    except OSError:
        return False  # gone or unreadable: written again, and the writer's checks decide


@dataclass
class Stage:
    """The worker's side of :meth:`SiteWriter.stage`: pickled to other processes, which write files
    into ``folder`` for the site's writer to commit. ``previous``: the last build's digests of the
    files under the stage's prefix."""

    root: str
    folder: str
    previous: dict
    _count: list = field(default_factory=lambda: [0])

    def put(self, relative: str, content: str) -> tuple[str, str, str | None]:
        """(relative, digest, staged file or None where the last build's file holds these bytes)."""
        data = content.encode(errors="replace")
        digest = _digest(data)
        if _holds(self.root, self.previous, relative, digest):
            return relative, digest, None
        self._count[0] += 1
        staged = os.path.join(self.folder, f"{os.getpid()}-{self._count[0]}")
        _exclusive_write(staged, data)
        return relative, digest, staged


def write_file(path: Path, text: str) -> None:
    """One file (a single-file report): a new name in a folder that exists, or a regular file
    (never a device or a named pipe: :func:`pdx.base.files.write_atomically`)."""
    write_atomically(path, text.encode(errors="replace"))


class SiteWriter:
    """Writes a site into ``root``; call :meth:`finish` once every file is written (or :meth:`abandon`)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self._lock: int | None = None
        self._stages: list[str] = []
        self._journal: int | None = None
        self.root = Path(root).expanduser().absolute()
        output_folder(self.root, "cannot publish into")  # a file, a device, a name too long: one line
        if not self.root.parent.is_dir():
            raise PdxError(f"cannot publish into {self.root}: folder {self.root.parent} does not exist",
                           "create it first")
        _refuse_special(self.root)
        self._made = not self.root.exists()
        try:
            self.root.mkdir(exist_ok=True)
            self.real = self.root.resolve()
            self._real = str(self.real)
            _refuse_special(self.real)
            self._lock = _lock(self.real)
            probe = tempfile.NamedTemporaryFile(prefix=".pdx-", dir=self.real)
            probe.close()
        except OSError as exc:
            raise PdxError(f"cannot publish into {self.root}: {exc.strerror or exc}",
                           "choose a folder you can write to") from None
        self.previous_title: str | None = None  # the title the site's last build recorded
        try:
            self.previous = self._read_manifest()
        except PdxError:
            self.release()
            raise
        self.written: dict[str, str] = {}
        self.changed: list[str] = []
        self._dirs: set[str] = set()
        self._plain: set[str] = set()  # folders on the way that are no links

    def release(self) -> None:
        for folder in self._stages:  # emptied by commit; what a stopped build staged goes
            shutil.rmtree(folder, ignore_errors=True)
        self._stages = []
        if self._journal is not None:
            os.close(self._journal)
            self._journal = None
        if self._lock is not None:
            os.close(self._lock)  # closing the folder's descriptor drops its lock
            self._lock = None

    def _read_manifest(self) -> dict[str, str]:
        """The files the last build wrote, by digest; a non-empty folder without one is not pdx's."""
        path = self.real / MANIFEST
        if not path.is_symlink() and path.is_file():
            try:
                data = json.loads(path.read_text())
                files = data.get("files") if isinstance(data, dict) else None
            except (OSError, ValueError):
                files = None
            if isinstance(files, dict):
                title = data.get("title")
                self.previous_title = title if isinstance(title, str) and 0 < len(title) <= MAX_TITLE else None
                return {f: d for f, d in files.items() if isinstance(d, str) and _inside(f)} | self._read_journal()
        journal = self.real / JOURNAL
        if not journal.is_symlink() and journal.is_file():  # a build that stopped before any manifest
            return self._read_journal()
        if any(p.name != MANIFEST and not p.name.startswith(".pdx-") for p in self.real.iterdir()) or path.exists():
            raise PdxError(f"cannot publish into {self.root}: it holds files and no site pdx made there",
                           "give an empty or new folder (a site from an older pdx: publish it anew)")
        return {}

    def _read_journal(self) -> dict[str, str]:
        """The files a stopped build recorded in :data:`JOURNAL` and that still hold those bytes."""
        path = self.real / JOURNAL
        if path.is_symlink():
            return {}
        try:
            text = _read_bytes(path).decode(errors="replace")
        except OSError:
            return {}
        found = {}
        for line in text.splitlines():  # a last line cut short (a full disk) names no file it wrote
            relative, tab, digest = line.partition("\t")
            if tab and len(digest) == 64 and _inside(relative) and _holds(self._real, {relative: digest}, relative,
                                                                         digest):
                found[relative] = digest
        return found

    def _record(self, relative: str, digest: str) -> None:
        """Put ``relative`` in the journal before its file is made or replaced."""
        if self._journal is None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            self._journal = os.open(self.real / JOURNAL, flags, 0o644)
            if not stat.S_ISREG(os.fstat(self._journal).st_mode):
                raise OSError(errno.EINVAL, "its journal is not a regular file", str(self.real / JOURNAL))
        line = f"{relative}\t{digest}\n".encode(errors="replace")
        if os.write(self._journal, line) != len(line):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.real / JOURNAL))

    def _drop_journal(self) -> None:
        """A manifest records every file now: the journal has nothing more to tell."""
        if self._journal is not None:
            os.close(self._journal)
            self._journal = None
        path = self.real / JOURNAL
        if not path.is_dir():
            path.unlink(missing_ok=True)

    def site_title(self, given: str | None) -> str:
        """The title to build under: the one given, else the one the site has (so publishing again
        without --title keeps its name), else :data:`DEFAULT_TITLE`."""
        return given if given is not None else self.previous_title or DEFAULT_TITLE

    def _target(self, relative: str) -> str:
        # Paths as strings: a site is 200,000 files, and pathlib's parsing cost a tenth of its build.
        parts = [p for p in relative.split("/") if p not in ("", ".")]
        if relative.startswith("/") or ".." in parts or not parts:  # paths are built from slugs; a guard
            raise PdxError(f"cannot publish {relative!r}: the path leaves the site folder",
                           "a run id or name that is a path: fix or remove that run")
        return os.path.join(self._real, *parts)

    def _linked(self, path: str) -> str | None:
        """The first symbolic link on the way from the site folder to ``path``, if any. A folder found
        to be a plain folder once is not asked again in this build (a site has thousands of files in
        a handful of folders)."""
        parent = os.path.dirname(path)
        if parent not in self._plain:
            current = self._real
            for part in os.path.relpath(parent, self._real).split(os.sep):
                current = os.path.join(current, part) if part != "." else current
                if current in self._plain or current == self._real:
                    continue
                if os.path.islink(current):
                    return current
                if os.path.isdir(current):
                    self._plain.add(current)
        return path if os.path.islink(path) else None

    def _ours(self, relative: str, path: str) -> bool:
        """Whether the file at ``path`` is the one the last build wrote (its bytes, unchanged)."""
        try:
            return self._linked(path) is None and _digest(_read_bytes(path)) == self.previous.get(relative)
        except OSError:
            return False

    def read_previous(self, relative: str) -> str | None:
        """A file the last build wrote (a cached chart), if it is still there as written."""
        path = self._target(relative)
        if relative not in self.previous or not self._ours(relative, path):
            return None
        try:
            return _read_bytes(path).decode()
        except (OSError, UnicodeDecodeError):
            return None

    def write(self, relative: str, content: str | bytes) -> None:
        # A lone surrogate (from a name) cannot be UTF-8: it becomes "?" rather than stop the build.
        data = content.encode(errors="replace") if isinstance(content, str) else content
        self._place(relative, _digest(data), lambda path: _atomic_write(path, data),
                    lambda path: _exclusive_write(path, data))

    def holds(self, relative: str, digest: str) -> bool:
        """Whether the last build's ``relative`` is in place with ``digest`` (a page it need not
        render again: :meth:`commit` takes it as ``(relative, digest, None)``)."""
        return _holds(self._real, self.previous, relative, digest)

    def stage(self, prefix: str) -> "Stage":
        """A folder in the site where other processes may write files under ``prefix`` (run pages)
        for :meth:`commit` to move into place: a build that stops leaves the site as it was."""
        folder = tempfile.mkdtemp(prefix=".pdx-stage-", dir=self.real)
        self._stages.append(folder)
        return Stage(str(self.real), folder, {r: d for r, d in self.previous.items() if r.startswith(prefix)})

    def commit(self, entries: list[tuple[str, str, str | None]]) -> None:
        """Files :meth:`Stage.put` made, each checked here as :meth:`write` checks its own."""
        for relative, digest, staged in entries:
            if staged is None:  # the page the last build wrote, unchanged (Stage.put read it back)
                self._place(relative, digest, None, _vanished)
            else:
                self._place(relative, digest, lambda path: os.replace(staged, path),
                            lambda path: _exclusive_move(staged, path))

    def _place(self, relative: str, digest: str, replace, create) -> None:
        """Record ``relative`` as written with ``digest``: ``replace(path)`` puts it over the file the
        last build wrote there, ``create(path)`` where there is none; neither runs when it is unchanged."""
        path = self._target(relative)
        if relative in self.written:  # two pages with one name: a slug bug, never silently overwritten
            raise RuntimeError(f"site file {relative} written twice in one build")
        linked = self._linked(path)
        if linked is not None:
            raise PdxError(f"cannot publish into {self.root}: {linked} is a symbolic link",
                           "publish never writes through one; remove it or give another folder")
        try:
            parent = os.path.dirname(path)
            if parent not in self._dirs:
                os.makedirs(parent, exist_ok=True)
                self._dirs.add(parent)
            if os.path.lexists(path):
                if os.path.isdir(path) or (relative != MANIFEST and replace is not None
                                           and not self._ours(relative, path)):
                    raise PdxError(f"cannot publish into {self.root}: {relative} is there and pdx did not write it",
                                   "move it away, or give an empty or new folder")
                self.written[relative] = digest
                if self.previous.get(relative) == digest:
                    return  # unchanged: keep the file, and its time stamp
                self._record(relative, digest)
                replace(path)
            else:
                # A new file: no reader can hold an older copy, so it is made in place (never
                # replacing what another writer just made there).
                self.written[relative] = digest
                self._record(relative, digest)
                create(path)
            self.changed.append(relative)
        except OSError as exc:
            raise _failure(path, exc) from None

    def _remove(self, relative: str) -> bool:
        target = self._target(relative)
        if not self._ours(relative, target):
            return False  # changed, replaced by a link or by someone else's file since: not pdx's to remove
        path = Path(target)
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent != self.real and not parent.is_symlink() and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
        return True

    def finish(self, about: dict) -> list[str]:
        """Remove what the last build wrote and this one did not; record this build's files."""
        try:
            stale = [r for r in sorted(set(self.previous) - set(self.written) - {MANIFEST}) if self._remove(r)]
            self._write_manifest(about, self.written)
            self._drop_journal()
            return stale
        finally:
            self.release()

    def abandon(self) -> None:
        """A build that stopped half-way: record the files of both builds, so the next publish may
        replace them (each still only while it holds the bytes recorded), and let the folder go. A
        folder this build made and wrote nothing into is removed again."""
        try:
            if self.written or self.previous or not self._made:
                kept = {"title": self.previous_title} if self.previous_title else {}  # the site keeps its name
                self._write_manifest({"complete": False, **kept}, {**self.previous, **self.written})
                self._drop_journal()  # else (a full disk) the journal is the record of what was written
        except (OSError, PdxError):
            pass
        finally:
            self.release()
            if not (self.written or self.previous) and self._made:
                try:
                    (self.real / JOURNAL).unlink(missing_ok=True)
                    self.real.rmdir()
                except OSError:
                    pass  # something else is in it now

    def _write_manifest(self, about: dict, files: dict[str, str]) -> None:
        files = {r: d for r, d in files.items() if r != MANIFEST}
        manifest = {**about, "format": MANIFEST_FORMAT, "files": dict(sorted(files.items()))}
        self.written.pop(MANIFEST, None)
        path = self._target(MANIFEST)
        if self._linked(path) is not None or os.path.isdir(path):
            raise PdxError(f"cannot publish into {self.root}: {MANIFEST} is not a plain file", "remove it")
        data = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
        try:
            if os.path.isfile(path) and _read_bytes(path) == data:
                return
            _atomic_write(path, data)
            self.changed.append(MANIFEST)
        except OSError as exc:
            raise _failure(path, exc) from None


def _inside(relative) -> bool:
    """Whether a manifest's entry names a file inside the site (one planted there may name any path)."""
    if not isinstance(relative, str) or not relative or "\\" in relative or "\x00" in relative:
        return False
    rel = PurePosixPath(relative)
    return not rel.is_absolute() and ".." not in rel.parts and rel.parts[0] != "."


def _refuse_special(path: Path) -> None:
    """``/`` and the home folder hold a user's own files: never a site's folder."""
    try:
        home = Path.home().resolve()
    except (RuntimeError, OSError):  # no home folder known
        home = Path(path.anchor)
    if path == Path(path.anchor) or path == home or path in home.parents:
        raise PdxError(f"cannot publish into {path}: it is {'the home folder' if path == home else 'a system folder'}",
                       "give a folder of its own, such as ./site")


def _lock(folder: Path) -> int | None:
    """Hold ``folder`` for this publish (a lock on the folder itself: no file is added); None where
    the platform has no such locks."""
    try:
        import fcntl
    except ImportError:
        return None
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise PdxError(f"cannot publish into {folder}: another pdx publish is writing there",
                       "wait for it to finish, then publish again") from None
    except OSError:  # a file system without locks (some network mounts): publish unlocked
        os.close(fd)
        return None
    return fd
