"""Runs grouped the way a site compares them: by hardware, model and backend.

A *configuration* is one hardware x model x backend: a leaderboard row, and a
comparison page when it holds several runs. Its headline figures are the
best runs of the selection's headline tests (the pp and tg tests at depth 0,
batch 1, that most runs share).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

from pdx.reports.labels import hardware_label, slug
from pdx.reports.rows import DECODE, PHASE_OF_KIND, PREFILL, Row, run_rows


def hardware_key(run: dict) -> str:
    return run["hardware"]["id"]


def model_key(run: dict) -> str:
    return run["model"]["sha256"]


def config_key(run: dict) -> tuple[str, str, str]:
    return hardware_key(run), model_key(run), run["backend"]


def _digest(*parts: str) -> str:
    """A short hash of a whole key: two keys never share a page, however their names read."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:10]


def hardware_slug(run: dict) -> str:
    return slug(hardware_label(run), _digest(hardware_key(run)))


def model_slug(run: dict) -> str:
    return slug(run["model"]["name"], _digest(model_key(run)))


def config_slug(run: dict) -> str:
    readable = f"{hardware_label(run)[:20]}-{run['model']['name'][:20]}-{run['backend'][:16]}"
    return slug(readable, _digest(*config_key(run)), limit=60)


def headline_tests(runs: list[dict]) -> dict[str, str]:
    """{phase: test name}: the most common depth-0, batch-1 pp and tg tests."""
    counts: dict[str, Counter] = {PREFILL: Counter(), DECODE: Counter()}
    for run in runs:
        for test in run["tests"]:
            phase = PHASE_OF_KIND.get(test["kind"])
            if phase in counts and test["depth"] == 0 and test["batch"] == 1 and test["status"] == "ok":
                counts[phase][test["name"]] += 1
    return {phase: c.most_common(1)[0][0] for phase, c in counts.items() if c}


@dataclass
class Group:
    """Runs sharing a key, newest first."""

    key: tuple
    runs: list[dict] = field(default_factory=list)
    # Runs are read-only once grouped, and a site puts a configuration on several boards.
    _headlines: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def latest(self) -> dict:
        return self.runs[0]

    def headline(self, tests: dict[str, str]) -> dict[str, tuple[dict, Row] | None]:
        """{phase: the run with the highest mean rate on that phase's test, and its row}; each run's
        rows made once for every phase, and the answer kept."""
        known = self._headlines.get(tuple(tests.items()))
        if known is not None:
            return known
        best: dict[str, tuple[dict, Row]] = {}
        for run in self.runs:
            for row in run_rows(run):
                if row.ok and not row.part and tests.get(row.phase) == row.test:
                    if row.phase not in best or row.rate > best[row.phase][1].rate:
                        best[row.phase] = (run, row)
        found = self._headlines[tuple(tests.items())] = {phase: best.get(phase) for phase in tests}
        return found


def group_by(runs: list[dict], key) -> dict:
    groups: dict = {}
    for run in runs:
        k = key(run)
        groups.setdefault(k, Group(k)).runs.append(run)
    return groups
