"""``pdx hub verify``: the check a results repository's CI runs on every pull request.

Each file must be a good bundle (size, JSON, schema, digests) holding one
run and named by that run's content id (so an edit that recomputed the
digest still shows); no run may appear twice, by content or by id; one
model sha256 has one name and one description; and the rates must be
plausible: none above its stored ceiling beyond a tolerance, and every
stored rate (the ceiling's ``measured``, the ``avg_ts`` of an imported
llama-bench record) the mean its samples give: :mod:`pdx.api.contrib.plausible`,
by which ``pdx submit`` refuses too, so the two cannot disagree. Each run
also passes the registry's record check, whose rate bounds need no stored
ceiling (:mod:`pdx.registry.plausibility`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pdx.api.contrib.plausible import DEFAULT_TOLERANCE, rate_problems
from pdx.api.contrib.submit import model_identity_problem
from pdx.contract.errors import ImportFileError
from pdx.registry.hub_folder import FILES_PER_TASK, bundle_files, default_workers, file_name, read_records
from pdx.registry.redact import describe_private, private_fields
from pdx.registry.validate import RecordError, check_record
from pdx.base.secrets import secret_fields
from pdx.base.workers import chunked

# What a model sha256 must describe the same way in every file.
MODEL_FACTS = ("name", "format", "architecture", "n_params", "dtype", "file_bytes")


@dataclass(frozen=True)
class Problem:
    file: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


@dataclass
class Verification:
    files: int
    runs: int
    problems: list[Problem]


def verify_folder(folder: str | Path, tolerance: float = DEFAULT_TOLERANCE, workers: int | None = None) -> Verification:
    """Every problem of a results folder, one per line's worth, in file order. Each file's own checks
    run in worker processes for a large folder (:mod:`pdx.base.workers`); those across files here."""
    root = Path(folder)
    problems: list[Problem] = []
    by_content: dict[str, str] = {}
    by_id: dict[str, str] = {}
    models: dict[str, tuple[str, dict]] = {}  # sha256 -> (first file, its facts)
    files = bundle_files(root)
    jobs = [(str(path), path.relative_to(root).as_posix(), tolerance) for path in files]
    runs = 0
    for name, own, records in chunked(f"{__name__}:_check_files", jobs, workers or default_workers(len(files)),
                                      FILES_PER_TASK):
        problems.extend(Problem(name, m) for m in own)
        for record in records:
            runs += 1
            problems.extend(Problem(name, m) for m in _across_files(record, name, by_content, by_id, models))
    return Verification(len(files), runs, problems)


def _check_files(jobs: list[tuple[str, str, float]]) -> list:
    """The checks of each file alone: [(name, its problems, [what the checks across files need per run])]."""
    out = []
    for path, name, tolerance in jobs:
        try:
            records = read_records(Path(path), name)
        except ImportFileError as exc:
            out.append((name, [exc.message.removeprefix(f"cannot import {name}: ")], []))
            continue
        own = [] if len(records) == 1 else [f"holds {len(records)} runs; a results folder keeps one run per file "
                                            "(`pdx submit` writes them)"]
        own += [problem for r in records if (problem := _secrets_problem(r))]
        own += [problem for r in records if (problem := _record_problem(r))]
        own += [problem for r in records if (problem := _private_problem(r))]
        out.append((name, own, [_alone(r, Path(path), len(records), tolerance) for r in records]))
    return out


def _record_problem(record: dict) -> str | None:
    """What the registry's one record check refuses in a run (:mod:`pdx.registry.validate`): a date that
    no measurement has, a rate no hardware pdx knows could reach with its model, even where no ceiling
    was stored; so a folder verify passes is one every registry would take."""
    try:
        check_record(record)
    except RecordError as exc:
        return f"run {str(record['id'])[:12]}: {exc.message.split(': ', 2)[-1]}"
    return None


def _secrets_problem(record: dict) -> str | None:
    """A run that holds secrets (a key, a token, a URL's password; the fields named, never their values):
    the site would not show them (publish redacts), but the pull request has made them public already."""
    fields = secret_fields(record)
    if not fields:
        return None
    listed = ", ".join(fields[:10]) + (f" and {len(fields) - 10} more" if len(fields) > 10 else "")
    return (f"run {str(record['id'])[:12]} holds secrets ({listed}): a results folder takes redacted runs only "
            "(`pdx submit` writes them); revoke what leaked")


def _private_problem(record: dict) -> str | None:
    """A run that holds private text (:data:`pdx.registry.redact.PRIVATE_KINDS`: a host name, a user name,
    an address, a file path; secrets have their own line): the fields named with their kind, never the
    text. A results folder takes only what `pdx submit` writes, redacted."""
    try:
        found = [(where, kind) for where, kind in private_fields(record) if kind != "secret"]
    except (AttributeError, TypeError):  # a record of the wrong shape: the record check names it
        return None
    if not found:
        return None
    return (f"run {str(record['id'])[:12]} holds private data ({describe_private(found)}): a results folder "
            "takes redacted runs only (`pdx submit` writes them, or `pdx export --redact`)")


def _alone(record: dict, path: Path, n_records: int, tolerance: float) -> dict:
    expected = file_name(record)
    model = record["model"]
    identity = model_identity_problem(model)
    return {"content": expected, "id": record["id"],
            "misnamed": n_records == 1 and path.name != expected, "file": path.name,
            "older_name": file_name(record, 1),
            "identity": identity, "sha256": model.get("sha256"),
            "facts": None if identity else {k: model.get(k) for k in MODEL_FACTS},
            "rates": rate_problems(record, tolerance)}


def _across_files(run: dict, name: str, by_content: dict, by_id: dict, models: dict) -> list[str]:
    found = []
    if run["misnamed"] and run["file"] == run["older_name"]:
        found.append(f"named {run['file']} by its run's content id of version 1, which leaves out its energy and "
                     f"conditions: rename it {run['content']} (`git mv`), the name this pdx gives it")
    elif run["misnamed"]:
        found.append(f"named {run['file']} but its run's content id makes it {run['content']}: "
                     "the run was edited after it was submitted, or the file renamed")
    if run["content"] in by_content:
        found.append(f"duplicate of {by_content[run['content']]} (the same run)")
    else:
        by_content[run["content"]] = name
        if run["id"] in by_id:
            found.append(f"run id {run['id']} is also in {by_id[run['id']]}")
        by_id.setdefault(run["id"], name)
    if run["identity"]:
        found.append(f"run {run['id'][:12]}: {run['identity']}")
    else:
        facts = run["facts"]
        first = models.setdefault(run["sha256"], (name, facts))
        for key in MODEL_FACTS:
            if first[1][key] != facts[key]:
                found.append(f"model sha256 {run['sha256'][:12]} has {key} {facts[key]!r} here "
                             f"but {first[1][key]!r} in {first[0]}")
    found.extend(run["rates"])
    return found
