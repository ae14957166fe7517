"""What each file of a results folder gave the last build of its site, so that the next reads only
the files that are new or changed (``pdx publish --bundles``).

A file is known by the SHA-256 of its bytes. For each, the cache holds what the site's pages read
of its runs (:func:`pdx.reports.site.runs.facts`: listing, places, headline candidates) and the
digests of the run pages rendered from it; a run kept whole is read from its file again. Entries
hold only under the context they were made in (pdx's version, the site's title, the templates'
bytes): another context starts the cache afresh. The cache is a SQLite file outside the site (a
static host should not serve it), written in one transaction that commits only once the site is
built; a file that is not such a cache is set aside with a warning, never trusted, and the site
built as without one. Nothing in it reaches a page unchecked: a page is taken as rendered only
where the site folder holds it with the digest both the cache and the site's manifest record.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import zlib
from pathlib import Path

import pdx
from pdx.contract.errors import PdxError
from pdx.base.paths import cache_dir
from pdx.reports.site.pages import SiteLinks
from pdx.reports.site.pageset import navigation
from pdx.reports.site.runs import held_once

# 4: places by test shared (comparison pairs) and the best estimate run; 5: runs redacted on read; 6: listings say
# why a run gives no headline (left_out), and only a valid run holds a "best" place
FORMAT = "pdx-bundle-cache/6"
SHARED = ("hardware", "model", "engine")  # listing fields many runs share, stored once each


def default_path(site: str | os.PathLike) -> Path:
    """One cache per site folder, in pdx's cache directory."""
    real = os.path.realpath(site)
    return cache_dir("sites") / f"{hashlib.sha256(real.encode()).hexdigest()[:24]}.sqlite"


def context(title: str, template_dirs: list[Path]) -> str:
    """What the run pages depend on besides their runs."""
    digest = hashlib.sha256()
    for folder in template_dirs:
        for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")

    # The navigation too: a plugin's page is linked from every run page.
    return json.dumps([FORMAT, pdx.__version__, title, digest.hexdigest(), navigation()])


_LISTED_TEXT = ("id", "status", "backend")


def _well_formed(entry) -> bool:
    """Whether an entry has the shape :meth:`BundleCache.put` gives one (what a build reads of it)."""
    if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("sha256"), str)
            and isinstance(entry.get("runs"), list)):
        return False
    for run in entry["runs"]:
        if not (isinstance(run, dict) and isinstance(run.get("facts"), dict) and isinstance(run.get("pages"), list)):
            return False
        found, listed = run["facts"], run["facts"].get("listing")
        if not (isinstance(listed, dict) and all(isinstance(listed.get(k), str) for k in _LISTED_TEXT + SHARED)
                and all(_text(listed.get(k), True) for k in ("created_at", "finished_at", "left_out"))
                and (listed.get("threads") is None or type(listed["threads"]) is int)
                and all(isinstance(listed.get(k), list) and all(isinstance(x, str) for x in listed[k])
                        for k in ("tests", "tags"))
                and isinstance(listed.get("headline_figures"), list)
                and len(listed["headline_figures"]) == 2
                and all(f is None or (isinstance(f, dict) and isinstance(f.get("test"), str)
                                      and isinstance(f.get("rate"), (int, float))
                                      and isinstance(f.get("fraction", ""), (int, float, type(None))))
                        for f in listed["headline_figures"])):
            return False
        places, headline = found.get("places"), found.get("headline")
        if not (isinstance(places, list) and all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], list) and p[0]
                and all(isinstance(k, (str, int, type(None))) for k in p[0])
                and (p[1] is None or isinstance(p[1], (int, float))) for p in places)):
            return False
        if not (isinstance(headline, list) and all(
                isinstance(h, list) and len(h) == 3 and isinstance(h[0], str) and isinstance(h[1], str)
                and isinstance(h[2], int) for h in headline)):
            return False
        if not all(isinstance(page, list) and len(page) == 2 and all(isinstance(x, str) for x in page)
                   for page in run["pages"]):
            return False
        own = SiteLinks("").run(listed)  # the run's own page and its JSON: the id is the one they hold
        if sorted(page[0] for page in run["pages"]) != sorted([own, own.removesuffix(".html") + ".json"]):
            return False
    return True


def _text(value, optional: bool = False) -> bool:
    return isinstance(value, str) or (optional and value is None)


def _parts_well_formed(listed: dict) -> bool:
    """Whether a listing's shared parts hold what lists and labels read of them."""
    hardware, model, engine = listed["hardware"], listed["model"], listed["engine"]
    gpus = hardware.get("gpus") or []
    return (_text(hardware.get("id")) and _text(hardware.get("name"), True) and isinstance(gpus, list)
            and all(isinstance(g, dict) and _text(g.get("name"), True) for g in gpus)
            and _text(model.get("sha256")) and _text(model.get("name"))
            and _text(engine.get("name")) and _text(engine.get("version"), True))


class BundleCache:
    """Open with :meth:`open`; :meth:`get` during the build, :meth:`put` each file read, then
    :meth:`commit` once the site is built (or :meth:`close` to leave it as it was)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.parts: dict[str, dict] = {}
        self.stored_parts: set[str] = set()
        self._keys: dict[int, tuple[dict, str]] = {}

    @classmethod
    def open(cls, path: str | os.PathLike, made_in: str, ours: bool = False) -> "BundleCache | None":
        """The cache at ``path``, made anew where it holds another context. ``ours``: the path is
        pdx's own (:func:`default_path`), so a file there that is not a cache is set aside and
        replaced; a path given is never touched unless it is a cache."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return cls(cls._connect(path, made_in))
        except (sqlite3.Error, OSError, ValueError) as exc:
            if not ours:
                raise PdxError(f"cannot use {path} as the site's cache: {exc}",
                               "give the path of a new file, or of a cache pdx made") from None
            aside = path.with_name(path.name + ".broken")
            print(f"pdx: warning: the site's cache {path} is unreadable ({exc}); set aside as {aside.name}, "
                  "and every file read", file=sys.stderr)
        try:
            os.replace(path, aside)
            return cls(cls._connect(path, made_in))
        except (sqlite3.Error, OSError, ValueError):
            return None

    @staticmethod
    def _connect(path: Path, made_in: str) -> sqlite3.Connection:
        if path.exists() and not path.is_file():
            raise ValueError("it is not a file")
        db = sqlite3.connect(path, isolation_level=None)
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and (tables != {"meta", "files", "parts"}
                           or db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() != (FORMAT,)):
                raise ValueError("it is not a pdx site cache")
            db.execute("BEGIN")
            if not tables:
                db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute("CREATE TABLE files (digest TEXT PRIMARY KEY, pages TEXT NOT NULL, entry BLOB NOT NULL)")
                db.execute("CREATE TABLE parts (digest TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
            row = db.execute("SELECT value FROM meta WHERE key = 'context'").fetchone()
            if row is None or row[0] != made_in:
                db.execute("DELETE FROM files")
                db.execute("DELETE FROM parts")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('context', ?)", (made_in,))
            db.execute("CREATE TEMP TABLE seen (digest TEXT PRIMARY KEY)")
        except BaseException:
            db.close()
            raise
        return db

    def empty(self) -> bool:
        return self.db.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None

    def pages(self, digest: str) -> list | None:
        """[(relative, digest)] of the run pages the last build made from the file, or None."""
        try:
            row = self.db.execute("SELECT pages FROM files WHERE digest = ?", (digest,)).fetchone()
            return None if row is None else [(str(relative), str(page)) for relative, page in json.loads(row[0])]
        except (sqlite3.Error, ValueError, TypeError):
            return None

    def get(self, digest: str) -> dict | None:
        """A file's entry as :meth:`put` stored it, its listings' shared parts restored; None where
        there is none or it does not read as one."""
        try:
            row = self.db.execute("SELECT entry FROM files WHERE digest = ?", (digest,)).fetchone()
            if row is None:
                return None
            entry = json.loads(zlib.decompress(row[0]))
            if not _well_formed(entry):
                return None
            for run in entry["runs"]:
                listed = run["facts"]["listing"]
                for field in SHARED:
                    listed[field] = self._part(listed[field])
                if not _parts_well_formed(listed):
                    return None
                held_once(listed)  # held for the whole build, as a listing made from the file is
            return entry
        except (sqlite3.Error, ValueError, KeyError, TypeError, AttributeError, zlib.error):
            return None

    def _part(self, digest: str) -> dict:
        if digest not in self.parts:
            row = self.db.execute("SELECT value FROM parts WHERE digest = ?", (digest,)).fetchone()
            value = json.loads(row[0])
            if not isinstance(value, dict):
                raise ValueError(f"part {digest} is not an object")
            self.parts[digest] = value
            self.stored_parts.add(digest)
        return self.parts[digest]

    def put(self, digest: str, entry: dict) -> None:
        """Store a file's entry: {"name", "sha256", "runs": [{"facts", "pages"}]}."""
        runs = []
        for run in entry["runs"]:
            listed = dict(run["facts"]["listing"])
            for field in SHARED:
                listed[field] = self._part_key(listed[field])
            runs.append({"facts": {**run["facts"], "listing": listed}, "pages": run["pages"]})
        pages = [page for run in runs for page in run["pages"]]
        self.db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?)",
                        (digest, json.dumps(pages),
                         zlib.compress(json.dumps({**entry, "runs": runs}, default=str).encode(), 1)))
        self.saw(digest)

    def _part_key(self, value: dict) -> str:
        # Runs share these objects (one per machine, model, engine): each is written out once.
        known = self._keys.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        text = json.dumps(value, sort_keys=True, default=str)
        key = hashlib.sha256(text.encode()).hexdigest()
        if key not in self.stored_parts:
            self.db.execute("INSERT OR REPLACE INTO parts VALUES (?, ?)", (key, text))
            self.stored_parts.add(key)
        self._keys[id(value)] = (value, key)
        return key

    def saw(self, digest: str) -> None:
        """A file of this build: its entry stays (the others are let go at :meth:`commit`)."""
        self.db.execute("INSERT OR IGNORE INTO seen VALUES (?)", (digest,))

    def commit(self) -> None:
        self.db.execute("DELETE FROM files WHERE digest NOT IN (SELECT digest FROM seen)")
        self.db.execute("COMMIT")
        self.db.close()

    def close(self) -> None:
        try:
            self.db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        self.db.close()
