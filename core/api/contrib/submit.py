"""``pdx submit``: runs as redacted bundle files for a shared results folder.

A shared site compares machines, so a run that would mislead there is
refused unless the contributor insists: one that did not complete, a
failed test, a run that gives no headline (:func:`pdx.domain.headline.problems`,
the rule every leaderboard reads: a test above its ceiling, one whose rate
varied more than a stated coefficient of variation, a serving test of an
overloaded server), a model known only by a tool's description (two
different files would look like one model), or a rate ``pdx hub verify``
would call implausible (its own check, so what submit writes verify accepts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pdx.domain import headline
from pdx.api.contrib.plausible import rate_problems
from pdx.base.files import output_folder
from pdx.registry import bundle
from pdx.registry.hub_folder import file_name
from pdx.registry.redact import describe_private, private_fields
from pdx.registry.transfer import write_json
from pdx.reports.results import with_stats

DEFAULT_MAX_CV = headline.NOISY_CV


@dataclass
class Submission:
    run_id: str
    file: str | None = None  # the bundle's name in the folder, when written
    refused: list[str] = field(default_factory=list)
    existed: bool = False
    removed: list[tuple[str, str]] = field(default_factory=list)  # (field, private kind) redaction replaced

    @property
    def removed_text(self) -> str:
        return describe_private(self.removed)


def model_identity_problem(model: dict) -> str | None:
    """Why a run's model cannot be told apart from other files of its name, or None."""
    if not model.get("sha256"):
        return "no model identity (no sha256)"
    if str((model.get("extra") or {}).get("identity", "")).startswith("described"):
        return ("no model identity (the tool only described the model; "
                "import its output again with `pdx import FILE -m MODEL`)")
    return None


def refusals(run: dict, max_cv: float) -> list[str]:
    """Why ``run`` (with stats) would mislead on a shared site; empty when it would not."""
    reasons = []
    if run["status"] != "complete":
        reasons.append(f"it is {run['status']}, not complete")
    if not run["tests"]:
        reasons.append("it has no tests")
    for test in run["tests"]:
        if test["status"] != "ok":
            reasons.append(f"test {test['name']} {test['status']}" + (f": {test['error']}" if test["error"] else ""))
    reasons.extend(words for _, words in headline.problems(run, max_cv))
    identity = model_identity_problem(run["model"])
    if identity:
        reasons.append(identity)
    reasons.extend(rate_problems(run))
    return reasons


def submit(registry, ids: list[str], folder: str | Path, max_cv: float = DEFAULT_MAX_CV,
           force: bool = False) -> list[Submission]:
    """Write each acceptable run (every run with ``force``) to ``folder`` as ``<content id>.pdx.json``."""
    folder = output_folder(folder, "cannot submit into", make=True)  # a file or a device there: one line
    done = []
    for record in registry.records(ids):
        entry = Submission(record["id"], refused=refusals(with_stats(record), max_cv))
        if not entry.refused or force:
            entry.removed = private_fields(record)
            document = bundle.make_bundle([record], redact=True)
            entry.file = file_name(document["runs"][0]["record"])
            entry.existed = (folder / entry.file).exists()
            if not entry.existed:  # same name, same content: the bytes on disk stay as committed
                write_json(document, str(folder / entry.file))
        done.append(entry)
    return done
