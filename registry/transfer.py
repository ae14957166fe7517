"""Moving runs between registries and files: export, import, push, pull.

Every path goes through whole run records (:mod:`pdx.registry.records`):
a bundle file, another tool's output read by an importer, or another
registry. Storing them is one transaction per call, skipping ids already
present, so each operation is all-or-nothing and idempotent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from pdx.domain.ceilings.imported import Given, judge
from pdx.contract.errors import PdxError
from pdx.base.files import write_atomically, write_stdout
from pdx.domain.models import identify
from pdx.registry import Registry
from pdx.registry.store import RunFilters
from pdx.registry.bundle import content_id, known_ids, make_bundle
from pdx.registry.importers import read_file


@dataclass
class Transfer:
    """What an import, push or pull did."""

    added: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    format: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "added": self.added, "skipped": self.skipped}


def select(registry: Registry, refs: list[str] | tuple[str, ...] = (),
           where: RunFilters | None = None) -> list[str]:
    """Run ids named (by id or prefix) or matching every ``where`` filter, oldest first; all runs if neither."""
    if refs:
        return [registry.resolve(ref) for ref in refs]
    return list(reversed(registry.run_ids(**(where or {}))))


def export_bundle(registry: Registry, ids: list[str], redact: bool = False) -> dict[str, Any]:
    if not ids:
        raise PdxError("no runs to export", "check the run ids or --where filters (see `pdx runs`)")
    return make_bundle(registry.records(ids), redact)


def write_json(document: dict[str, Any] | list[Any], output: str) -> None:
    """Write to a file atomically (a reader never sees half of it), or to stdout for "-"; a path that
    is there and is no regular file (a device, a named pipe) is refused (:mod:`pdx.base.files`)."""
    write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", output)


def write_text(text: str, output: str) -> None:
    """:func:`write_json`'s writing, of text made already."""
    if output == "-":
        write_stdout(text)
        return
    write_atomically(output, text.encode("utf-8", errors="replace"))


def _with_model(record: Mapping[str, Any], model_path: str) -> dict[str, Any]:
    info = identify(model_path).to_dict()
    with_model = dict(record) | {"model": info | {"id": info["sha256"]}}
    return with_model | {"id": content_id(with_model)}


def import_file(registry: Registry, path: str, fmt: str = "auto", tags: list[str] | None = None,
                model: str | None = None, given: Given | str | None = None) -> Transfer:
    """``given``: the chip or figures the user named (a :class:`pdx.domain.ceilings.imported.Given`, or a
    chip's name)."""
    given = given if isinstance(given, Given) else Given.parse(given)  # an unknown chip fails before the file is read
    found, records = read_file(path, fmt, given.hardware)
    if found == "bundle" and (model or given.any):
        raise PdxError("--model, --hardware and the figures apply to other tools' output, not to pdx bundles "
                       "(they name their models and machines)")
    if found != "bundle":
        records = [_with_model(r, model) if model else r for r in records]
    # The ids a run may be stored under, from the record its id was made of: judging sets ceilings the id
    # leaves out (a catalog that learns a figure must not make the same file a new run).
    known = [known_ids(r) for r in records]
    if found != "bundle":
        records = [judge(r, given) for r in records]
    if tags:
        records = [r | {"tags": sorted(set(r["tags"]) | set(tags))} for r in records]
    added, skipped = registry.add_records(records, f"cannot import {path}", known)
    return Transfer(added, skipped, found)


def copy_runs(source: Registry, dest: Registry, ids: list[str]) -> Transfer:
    """Copy runs by id; those already in ``dest`` are skipped (push and pull are this, both ways)."""
    present = dest.existing_ids(ids)
    missing = [i for i in ids if i not in present]
    added = dest.add_records(source.records(missing), f"runs from {source.display_url}")[0] if missing else []
    done = set(added)
    return Transfer(added, [i for i in ids if i not in done])
