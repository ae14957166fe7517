"""A results folder: one run per ``<content id>.pdx.json`` bundle file, in any sub-folder.

Reading goes through the bundle reader (size, JSON, schema, digests), so a
folder that publishes is one whose every file passes those checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from pdx.errors import ImportFileError, PdxError
from pdx.registry import bundle

SUFFIX = ".pdx.json"


def file_name(record: dict) -> str:
    """The name a run's bundle file has in a results folder: its content id."""
    return f"{bundle.content_id(record)}{SUFFIX}"


def bundle_files(folder: str | Path) -> list[Path]:
    """Every bundle file under ``folder``, in a stable order; hidden folders (.git) skipped."""
    root = Path(folder)
    if not root.is_dir():
        raise PdxError(f"{folder} is not a folder", "give the results folder (a checkout of the results repository)")
    found = (p for p in root.rglob(f"*{SUFFIX}")
             if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def read_records(path: Path, name: str) -> list[dict]:
    """The runs of one bundle file (``name`` is how errors call it); ImportFileError if it is not a good bundle."""
    document = bundle.parse_json(bundle.read_text(path), name)
    if not bundle.is_bundle(document):
        raise bundle.fail(name, "not a pdx bundle (no \"format\": \"pdx-bundle\")")
    return bundle.read_bundle(document, name)


def iter_bundles(folder: str | Path) -> Iterator[tuple[str, list[dict]]]:
    """(relative name, records) per file; the first bad file raises, naming itself."""
    root = Path(folder)
    for path in bundle_files(root):
        name = path.relative_to(root).as_posix()
        yield name, read_records(path, name)


def load_runs(folder: str | Path) -> list[dict]:
    """Every run of a results folder with its statistics, newest first, each id once.

    All or nothing: one damaged or altered file stops the build (run
    ``pdx hub verify`` for every problem at once)."""
    from pdx.stats.results import with_stats

    runs: dict[str, dict] = {}
    try:
        for _, records in iter_bundles(folder):
            for record in records:
                runs.setdefault(record["id"], record)
    except ImportFileError as exc:
        raise PdxError(exc.message, "run `pdx hub verify` on the folder to see every problem") from None
    if not runs:
        raise PdxError(f"no bundles (*{SUFFIX}) in {folder}", "add runs with `pdx submit -o FOLDER`")
    return sorted((with_stats(r) for r in runs.values()), key=lambda r: r["created_at"] or "", reverse=True)
