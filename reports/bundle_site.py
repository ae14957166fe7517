"""``pdx publish --bundles``: a site straight from a results folder, at any size.

One process holding every run with its samples does not scale to a community's folder (100,000
runs), so the build reads the folder twice, each time in worker processes, one per core:

1. Every file is read and checked (size, JSON, schema, digests: :mod:`pdx.contrib.folder`), its
   runs' statistics derived, and each run sent back as every page but its own reads it
   (:func:`aggregate_record`, without most samples). The main process keeps only those, and
   builds the leaderboard, group, hub and comparison pages from them.
2. Each run's file is read again and the run's own page rendered (samples and all) in the
   workers; the main process writes the pages. A file whose text changed between the two
   passes stops the build (the site keeps its last complete state, see the writer).

A folder with few files is read in this process: starting workers would cost more.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pdx.contrib import folder as results_folder
from pdx.contrib.folder import FILES_PER_TASK, default_workers
from pdx.errors import ImportFileError, PdxError
from pdx.reports.site import PageRenderer, PublishResult, SiteBuilder, publish
from pdx.stats.results import with_stats
from pdx.workers import chunked


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


# The parts of a run that most runs of one machine, model or engine hold alike: kept once in memory.
SHARED_PARTS = ("hardware", "environment", "engine", "model", "ceiling_basis", "workload", "options")


def _share(run: dict, shared: dict) -> dict:
    """``run`` with each of its :data:`SHARED_PARTS`, and each part of its tests' ceilings that is an
    object, replaced by an equal one already held, if any (pages only read these parts)."""
    for part in SHARED_PARTS:
        run[part] = _one(run.get(part), part, shared)
    for test in run["tests"]:
        ceilings = test.get("ceilings")
        if isinstance(ceilings, dict):  # its figures are alike across runs; measured and fraction are not
            for key, value in ceilings.items():
                ceilings[key] = _one(value, key, shared)
    return run


def _one(value, part: str, shared: dict):
    if not isinstance(value, dict):
        return value
    return shared.setdefault(f"{part}\x00{json.dumps(value, sort_keys=True, default=str)}", value)


_WORKER: dict = {}


def _start_worker(renderer: PageRenderer | None) -> None:
    _WORKER["renderer"] = renderer


def _read_files(jobs: list[tuple[str, str]]) -> list:
    """Pass 1 for some files: [(name, sha256, [aggregate records]) or (name, error message, None)]."""
    out = []
    for path, name in jobs:
        try:
            sha256, records = results_folder.read_file(Path(path), name)
        except ImportFileError as exc:
            out.append((name, exc.message, None))
            continue
        out.append((name, sha256, [aggregate_record(with_stats(r)) for r in records]))
    return out


def _render_runs(jobs: list[tuple[str, str, str, tuple[str, ...]]]) -> list:
    """Pass 2 for some files: the page files of the runs named, read again from their files."""
    renderer = _WORKER["renderer"]
    pages = []
    for path, sha256, name, ids in jobs:
        for record in results_folder.read_again(Path(path), sha256, name):
            if record["id"] in ids:
                pages.append(renderer.run_page(with_stats(record)))
    return pages


class BundleSiteBuilder(SiteBuilder):
    """A site builder whose runs lack most samples (:func:`aggregate_record`): a run's own page and
    a comparison read the run again from its file."""

    def __init__(self, runs: list[dict], writer, title: str, templates=None, *, sources: dict, workers: int) -> None:
        super().__init__(runs, writer, title, templates)
        self.sources, self.workers = sources, workers

    def full(self, run: dict) -> dict:
        path, sha256, name = self.sources[run["id"]]
        return next(with_stats(r) for r in results_folder.read_again(Path(path), sha256, name) if r["id"] == run["id"])

    def write_run_pages(self) -> None:
        by_file: dict[str, list[str]] = {}
        for run in self.runs:
            by_file.setdefault(self.sources[run["id"]][0], []).append(run["id"])
        jobs = [(path, self.sources[ids[0]][1], self.sources[ids[0]][2], tuple(ids)) for path, ids in by_file.items()]
        for files in chunked(f"{__name__}:_render_runs", jobs, self.workers, FILES_PER_TASK,
                             f"{__name__}:_start_worker", (self.page_renderer,)):
            self.write_files(files)


def read_folder(folder: str | os.PathLike, workers: int | None = None) -> tuple[list[dict], dict]:
    """Pass 1: every run of the folder as :func:`aggregate_record` makes it, newest first, each id
    once (the first file in name order wins), and {run id: (path, file sha256, name)}. All or
    nothing: the first bad file stops it, naming itself."""
    root = Path(folder)
    files = results_folder.bundle_files(root)
    if not files:
        raise PdxError(f"no bundles (*{results_folder.SUFFIX}) in {folder}", "add runs with `pdx submit -o FOLDER`")
    workers = workers or default_workers(len(files))
    jobs = [(str(p), p.relative_to(root).as_posix()) for p in files]
    runs: dict[str, dict] = {}
    sources: dict[str, tuple[str, str, str]] = {}
    paths = dict((name, path) for path, name in jobs)
    shared: dict[str, dict] = {}
    for name, sha256, records in chunked(f"{__name__}:_read_files", jobs, workers, FILES_PER_TASK):
        if records is None:
            raise PdxError(sha256, "run `pdx hub verify` on the folder to see every problem")
        for record in records:
            if record["id"] not in runs:
                runs[record["id"]] = _share(record, shared)
                sources[record["id"]] = (paths[name], sha256, name)
    ordered = sorted(runs.values(), key=lambda r: r["created_at"] or "", reverse=True)
    return ordered, sources


def publish_bundles(folder: str | os.PathLike, root: str | os.PathLike, title: str = "pdx results",
                    templates: str | os.PathLike | None = None, workers: int | None = None) -> PublishResult:
    """The site of a results folder; the folder is read whole (and checked) before the site is touched."""
    runs, sources = read_folder(folder, workers)
    workers = workers or default_workers(len(sources))
    return publish(runs, root, title, templates,
                   builder=lambda *args: BundleSiteBuilder(*args, sources=sources, workers=workers))
