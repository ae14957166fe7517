"""Runs grouped the way a site compares them: by hardware, model and backend.

A *configuration* is one hardware x model x backend: a leaderboard row, and a
comparison page when it holds several runs. Its headline figures are the
best runs of the selection's headline tests (the pp and tg tests at depth 0,
batch 1, that most runs share), of its valid runs only (:func:`pdx.domain.headline.left_out`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

from pdx.domain import headline as validity
from pdx.domain.headline import candidate
from pdx.registry.importers.common import UNRECORDED_HARDWARE
from pdx.reports.labels import hardware_label, slug
from pdx.reports.rows import DECODE, PHASE_OF_KIND, PREFILL, Row, run_rows


def hardware_key(run: dict) -> str:
    return run["hardware"]["id"]


def hardware_recorded(run: dict) -> bool:
    """Whether the run names its machine: an imported run whose tool did not has no hardware page
    (its runs are not one machine's), and the site says how many such runs it holds."""
    return hardware_key(run) != UNRECORDED_HARDWARE


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


def engine_slug(run: dict) -> str:
    """A machine and backend: the site's history page of an engine on one machine."""
    return slug(f"{hardware_label(run)[:30]}-{run['backend'][:16]}", _digest(hardware_key(run), run["backend"]),
                limit=60)


def config_slug(run: dict) -> str:
    readable = f"{hardware_label(run)[:20]}-{run['model']['name'][:20]}-{run['backend'][:16]}"
    return slug(readable, _digest(*config_key(run)), limit=60)


def headline_candidates(run: dict) -> list[list]:
    """[phase, test name, its place in the run] of each test that can be a headline
    (:func:`pdx.domain.headline.candidate`: a pp or tg test measured at depth 0, batch 1)."""
    return [[phase, test["name"], index] for index, test in enumerate(run["tests"])
            if (phase := PHASE_OF_KIND.get(test["kind"])) in (PREFILL, DECODE) and candidate(test)]


class HeadlineCounter:
    """Counts the depth-0, batch-1 pp and tg tests of runs given one at a time, in any order, each
    with its rank (larger: newer); :meth:`tests` names each phase's most common, a tie going to
    the test of the newest run (and, in one run, to its first such test)."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.newest: dict[tuple[str, str], tuple] = {}

    def add(self, run: dict, rank) -> None:
        self.add_candidates(headline_candidates(run), rank)

    def add_candidates(self, candidates: list, rank) -> None:
        """A run's :func:`headline_candidates`."""
        for phase, name, index in candidates:
            key = (phase, name)
            self.counts[key] += 1
            self.newest[key] = max(self.newest.get(key, (rank, -index)), (rank, -index))

    def tests(self) -> dict[str, str]:
        """{phase: test name}."""
        best: dict[str, tuple[str, str]] = {}
        for key in self.counts:
            phase = key[0]
            if phase not in best or (self.counts[key], self.newest[key]) > (self.counts[best[phase]],
                                                                            self.newest[best[phase]]):
                best[phase] = key
        return {phase: best[phase][1] for phase in (PREFILL, DECODE) if phase in best}


def headline_tests(runs: list[dict]) -> dict[str, str]:
    """{phase: test name}: the most common depth-0, batch-1 pp and tg tests of runs newest first."""
    counter = HeadlineCounter()
    for index, run in enumerate(runs):
        counter.add(run, -index)
    return counter.tests()


@dataclass
class Group:
    """Runs sharing a key, newest first: ``runs`` those its pages read whole (a site's: the runs
    that hold its newest and best figures, :mod:`pdx.reports.site.runs`), ``listed`` every one of
    them as lists show it (by default ``runs`` itself)."""

    key: tuple
    runs: list[dict] = field(default_factory=list)
    listed: list[dict] | None = None
    # Runs are read-only once grouped, and a site puts a configuration on several boards.
    _headlines: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def latest(self) -> dict:
        return self.runs[0]

    @property
    def every(self) -> list[dict]:
        """Every run of the group, as lists show them."""
        return self.runs if self.listed is None else self.listed

    def headline(self, tests: dict[str, str]) -> dict[str, tuple[dict, Row] | None]:
        """{phase: the valid run with the highest mean rate on that phase's test, and its row}; each
        run's rows made once for every phase, and the answer kept. A run left out
        (:func:`pdx.domain.headline.left_out`: above its ceiling, unable to fit, noisy, overloaded) is never
        the best."""
        known = self._headlines.get(tuple(tests.items()))
        if known is not None:
            return known
        best: dict[str, tuple[dict, Row]] = {}
        for run in self.runs:
            if validity.left_out(run):
                continue
            for row in run_rows(run):
                if (rate := row.measured) is not None and not row.part and tests.get(row.phase) == row.test:
                    if row.phase not in best or rate > (best[row.phase][1].measured or 0.0):
                        best[row.phase] = (run, row)
        found = self._headlines[tuple(tests.items())] = {phase: best.get(phase) for phase in tests}
        return found


def left_out_note(configs) -> str | None:
    """How many runs of these groups give no headline, and why (:func:`pdx.domain.headline.left_out_note`)."""
    return validity.left_out_note([validity.left_out(run) for group in configs for run in group.every])


def group_by(runs: list[dict], key) -> dict:
    groups: dict = {}
    for run in runs:
        k = key(run)
        groups.setdefault(k, Group(k)).runs.append(run)
    return groups
