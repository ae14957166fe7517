"""``pdx publish --bundles``: a site straight from a results folder, at any size.

One process holding every run with its samples does not scale to a community's folder (100,000
runs), so the folder is read once, in worker processes, one per core (:mod:`pdx.base.workers`). Each
worker reads and checks its files (size, JSON, schema, digests: :mod:`pdx.registry.hub_folder`),
derives each run's statistics, renders the run's own page (it reads only the run: every
configuration has a page to link) into the site writer's stage, and sends the run back as every
other page reads it (:func:`aggregate_record`, without most samples; the parts many runs hold
alike sent once, :func:`_pack`). The main process keeps of each run its listing, and whole only
the runs that hold a configuration's newest or best figures (:mod:`pdx.reports.site.runs`),
builds the leaderboard, group, hub and comparison pages from those, and moves the staged run
pages into place once every file has passed: a folder with a bad file leaves the site as it was. A
comparison reads its two runs again from their files, refusing a file whose text changed during the build.

A folder with few files is read in this process: starting workers would cost more.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pdx.contract.errors import ImportFileError, PdxError
from pdx.base.files import sha256_of
from pdx.registry import hub_folder as results_folder
from pdx.registry.hub_folder import FILES_PER_TASK, default_workers
from pdx.reports.site import pages
from pdx.reports import templating
from pdx.reports.hub import bundle_cache
from pdx.reports.hub.bundle_cache import BundleCache
from pdx.reports.rows import keeping_rows
from pdx.reports.site.builder import PageRenderer, PublishResult, SiteBuilder, build_site
from pdx.reports.site.runs import SiteRuns, facts
from pdx.reports.site.writer import Stage
from pdx.reports.results import with_stats
from pdx.base.workers import chunked


def aggregate_record(run: dict) -> dict:
    """A run with its statistics as the pages other than its own read it: request records whole
    (serving charts), the sample times of batch-1 decode tests (the depth fit, time per token);
    every other sample is read again for the run's own page only."""
    for test in run["tests"]:
        samples = test.get("samples")
        if samples is None:
            continue
        if test["kind"] == "tg" and test.get("batch", 1) == 1:
            test["samples"] = [{"ns": s["ns"]} for s in samples]
        else:
            del test["samples"]
    return run


# The parts of a run that most runs of one machine, model or engine hold alike, and each object of
# a test's ceilings (its figures are alike across runs; measured and fraction are not): sent from a
# worker once and held once (pages only read these parts).
SHARED_PARTS = ("hardware", "environment", "engine", "model", "ceiling_basis", "workload", "options")


def _places(run: dict):
    """(holder, key, where) of each shareable object of ``run``; ``where`` names it in the record."""
    for part in SHARED_PARTS:
        if isinstance(run.get(part), dict):
            yield run, part, part
    for index, test in enumerate(run["tests"]):
        ceilings = test.get("ceilings")
        if isinstance(ceilings, dict):
            for key, value in ceilings.items():
                if isinstance(value, dict):
                    yield ceilings, key, (index, key)


def _pack(run: dict, sent: set) -> tuple[dict, dict]:
    """``run`` with each shareable object that this worker has sent before replaced by None, and
    {where: the object's key}. A key is the digest of the object's repr, which equal JSON
    objects in the same key order share."""
    keys = {}
    for holder, key, where in _places(run):
        digest = hashlib.blake2b(repr((key, holder[key])).encode(), digest_size=16).digest()
        keys[where] = digest
        if digest in sent:
            holder[key] = None
        else:
            sent.add(digest)
    return run, keys


def _unpack(run: dict, keys: dict, held: dict) -> dict:
    """``run`` with every shareable object the one held (results come in the tasks' order, so an
    object a worker sent before has reached this process before)."""
    for holder, key, where in _places_of(run, keys):
        value = holder[key]
        holder[key] = held[keys[where]] if value is None else held.setdefault(keys[where], value)
    return run


def _places_of(run: dict, keys: dict):
    for where in keys:
        if isinstance(where, str):
            yield run, where, where
        else:
            yield run["tests"][where[0]]["ceilings"], where[1], where


_WORKER: dict = {}


def _start_worker(renderer: PageRenderer, stage: Stage) -> None:
    _WORKER.update(renderer=renderer, stage=stage, sent=set())


def _read_files(jobs: list[tuple[str, str]]) -> list:
    """Some files: each as :func:`_read_file` gives it."""
    with keeping_rows():  # each run's page is rendered once: its rows (and the run, samples and all) go after
        return [_read_file(path, name, _WORKER["renderer"], _WORKER["stage"], _WORKER["sent"]) for path, name in jobs]


def _read_file(path: str, name: str, renderer: PageRenderer, stage: Stage, sent: set) -> tuple:
    """(name, SHA-256 of its text, [(packed record, keys, staged page files)]), or (name, error
    message, None). The text is the file's bytes decoded as UTF-8, which encodes back to the same
    bytes: its SHA-256 is the file's (what the cache knows a file by), of the bytes its runs came from."""
    try:
        sha256, records = results_folder.read_file(Path(path), name)
    except ImportFileError as exc:
        return name, exc.message, None
    runs = []
    for record in records:
        record = with_stats(record)
        files = [stage.put(relative, text) for relative, text in renderer.run_page(record)]
        runs.append((*_pack(aggregate_record(record), sent), files))
    return name, sha256, runs


class BundleSiteBuilder(SiteBuilder):
    """A site builder whose runs lack most samples (:func:`aggregate_record`) and whose run pages
    are staged already: a comparison reads its runs again from their files."""

    def __init__(self, site_runs: SiteRuns, writer, title: str, templates=None, *, staged: list) -> None:
        super().__init__(site_runs, writer, title, templates)
        self.staged = staged

    def full(self, run: dict) -> dict:
        return _read_run(self.site_runs.source(run), run["id"])

    def write_run_pages(self) -> None:
        self.writer.commit(self.staged)
        self.pages += len(self.listed)


def read_folder(folder: str | os.PathLike, writer, title: str, templates=None,
                workers: int | None = None, cache: BundleCache | None = None,
                leave_out: frozenset[str] = frozenset()) -> BundleSiteBuilder:
    """The builder of ``folder``'s site: every run as :func:`aggregate_record` makes it, each id
    once (the first file in name order wins), its page staged in ``writer``. All or nothing: the
    first bad file stops it, naming itself. With ``cache``, a file the last build read (the same
    bytes, its pages in place) is taken from there, not read again. ``leave_out``: names of files
    (relative to ``folder``) not read at all."""
    root = Path(folder)
    found = [p for p in results_folder.bundle_files(root) if p.relative_to(root).as_posix() not in leave_out]
    if not found:
        raise PdxError(f"no bundles (*{results_folder.SUFFIX}) in {folder}", "add runs with `pdx submit -o FOLDER`")
    # Texts, not Paths: a Path holds several times its text, and a folder's are many.
    names, files = [p.relative_to(root).as_posix() for p in found], [str(p) for p in found]
    del found
    digests: list[str | None] = [None] * len(files)
    known: set[int] = set()  # the files the cache has, their pages in place
    if cache is not None and not cache.empty():
        for index, path in enumerate(files):
            digests[index] = digest = sha256_of(path)
            cache.saw(digest)
            made = cache.pages(digest)
            if made is not None and all(writer.holds(*page) for page in made):
                known.add(index)
    jobs = [(files[i], names[i]) for i in range(len(files)) if i not in known]
    renderer = PageRenderer(pages.site_info(title, [], inline=False), templates)
    results = iter(chunked(f"{__name__}:_read_files", jobs, workers or default_workers(len(jobs)), FILES_PER_TASK,
                           f"{__name__}:_start_worker", (renderer, writer.stage("runs/")))) if jobs else iter(())
    site_runs = SiteRuns()
    staged: list = []
    held: dict = {}
    read_here = 0
    here: list = []  # this process's stage and sent objects, made for the first file it reads
    for index, name in enumerate(names):  # in name order: which copy of a run wins, and ties in time
        path = files[index]
        known_digest = digests[index]
        entry = cache.get(known_digest) if cache is not None and known_digest is not None and index in known else None
        if entry is not None:
            for run in entry["runs"]:
                if site_runs.add_facts(run["facts"], (path, entry["sha256"], name)):
                    staged.extend((relative, digest, None) for relative, digest in run["pages"])
            continue
        if index in known:  # the cache had the file, but its entry does not read back: read here
            read_here += 1
            here = here or [writer.stage("runs/"), set()]  # one stage: each copies the last build's digests
            with keeping_rows():
                _, sha256, records = _read_file(path, name, renderer, *here)
        else:
            _, sha256, records = next(results)
        if records is None:
            raise PdxError(sha256, "run `pdx hub verify` on the folder to see every problem")
        runs = []
        for record, keys, page_files in records:
            record = _unpack(record, keys, held)  # a copy left out below may be the first to bring an object
            run_facts = facts(record)
            # a later file's copy: its page is left behind
            if site_runs.add_facts(run_facts, (path, sha256, name), record):
                staged.extend(page_files)
            runs.append({"facts": run_facts, "pages": [[relative, digest] for relative, digest, _ in page_files]})
        if cache is not None:
            cache.put(sha256, {"name": name, "sha256": sha256, "runs": runs})
    builder = BundleSiteBuilder(site_runs.finish(_read_kept), writer, title, templates, staged=staged)
    builder.files_read = len(jobs) + read_here
    return builder


def _read_run(source: tuple[str, str, str], run_id: str) -> dict:
    """One run of a file this build (or the cache's) checked, with its statistics; refused if the
    file's text changed since, or does not hold the run."""
    path, sha256, name = source
    record = next((r for r in results_folder.read_again(Path(path), sha256, name) if r["id"] == run_id), None)
    if record is None:
        raise PdxError(f"the site's cache says {name} holds run {run_id}, and it does not",
                       "remove the cache (the file --cache gave, or sites/ in pdx's cache directory), or give "
                       "--no-cache")
    return with_stats(record)


def _read_kept(source: tuple[str, str, str], run_id: str) -> dict:
    """A run the cache gave by its facts alone, as the pages other than its own read it."""
    return aggregate_record(_read_run(source, run_id))


def build_from_folder(folder: str | os.PathLike, root: str | os.PathLike, title: str | None = None,
                      templates: str | os.PathLike | None = None, workers: int | None = None,
                      cache: str | os.PathLike | bool = True, leave_out: frozenset[str] = frozenset()
                      ) -> PublishResult:
    """The site of a results folder, read whole before the site changes, less the files in
    ``leave_out``. The folder must have been checked as `pdx hub verify` checks it: publish through
    :func:`pdx.api.contrib.publish.publish_bundles`, which does. ``cache``: where to keep what each file
    gave this build, for the next (True: one file per site folder in pdx's cache directory; False:
    none, every file read). It is opened once the site's writer holds the folder, and kept only if
    the build succeeds."""
    opened: list[BundleCache] = []

    def builder(writer) -> BundleSiteBuilder:
        named = writer.site_title(title)  # None: the title the site has
        store = None
        if cache:
            path = bundle_cache.default_path(root) if cache is True else Path(cache)
            store = BundleCache.open(path, bundle_cache.context(named, templating.template_dirs(templates)),
                                     ours=cache is True)
            opened.extend([store] if store else [])
        return read_folder(folder, writer, named, templates, workers, store, leave_out)

    try:
        result = build_site(root, builder)
    except BaseException:
        for store in opened:
            store.close()
        raise
    for store in opened:
        store.commit()
    return result
