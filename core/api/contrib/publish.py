"""``pdx publish --bundles``: a hub folder checked as `pdx hub verify` checks it, then built into a
site (:mod:`pdx.reports.hub.bundle_site`) from what verify passes."""

from __future__ import annotations

import os

from pdx.api.contrib.verify import verify_folder
from pdx.contract.errors import PdxError
from pdx.reports.hub.bundle_site import build_from_folder
from pdx.reports.site.builder import PublishResult


def publish_bundles(folder: str | os.PathLike, root: str | os.PathLike, title: str | None = None,
                    templates: str | os.PathLike | None = None, workers: int | None = None,
                    cache: str | os.PathLike | bool = True, skip_rejected: bool = False) -> PublishResult:
    """The site of a results folder: what verify rejects refuses the build, or with ``skip_rejected``
    is left out (the result's ``rejected`` lists it). ``cache``: as
    :func:`pdx.reports.hub.bundle_site.build_from_folder` keeps it."""
    problems = rejected_files(folder, skip_rejected, workers)
    result = build_from_folder(folder, root, title, templates, workers, cache,
                               frozenset(problem.file for problem in problems))
    result.rejected = [str(problem) for problem in problems]
    return result


def rejected_files(folder: str | os.PathLike, skip: bool, workers: int | None = None) -> list:
    """What ``pdx hub verify`` finds wrong in ``folder`` (:class:`pdx.api.contrib.verify.Problem`), for a
    build that leaves those files out (``skip``); refused in one line otherwise. A site is built only
    from what verify passes: a run id in two files, two runs in a file, a forged rate or a secret
    never reach a page by a build that did not look."""
    problems = verify_folder(folder, workers=workers).problems
    if problems and not skip:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PdxError(f"cannot publish {folder}: `pdx hub verify` rejects it: {problems[0]}{more}",
                       "fix the files (`pdx hub verify FOLDER` lists every problem), or leave them out: "
                       "--skip-rejected")
    return problems
