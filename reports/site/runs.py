"""What a site's pages other than the runs' own read of its runs, gathered one run at a time.

A site lists every run (the runs page, each machine's, model's and configuration's count and list),
but its other figures are each *the newest* or *the best* of something: a leaderboard cell is a
configuration's best run on a headline test, a chart plots each series' newest measurement of each
test, the classic table reads each configuration's newest run that has the figures, "what to buy" its
best, a comparison its newest two that share a test. So :class:`SiteRuns` keeps of each run a
*listing* (the few fields the lists show, its headline figures made once: :func:`listing`), and
keeps a run whole only while it holds one of those places in its configuration (:func:`places`). A
community's folder of 100,000 runs then holds 100,000 listings and, per configuration, a handful of
runs, whatever the number of runs each has; every page comes out as it would from every run
(tests/test_site_runs.py builds a site both ways and compares the files).

A page's charts are given its configurations' kept runs (:class:`pdx.reports.charts.chartset.ChartView`),
newest first: what each chart of pdx's draws (newest rows, newest serving tests) is among them.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

from pdx.domain import headline
from pdx.reports import comparison, groups
from pdx.reports.charts import figures
from pdx.reports.groups import Group, HeadlineCounter
from pdx.reports.hub import hubdata
from pdx.reports.rows import forget_run, run_rows

# The fields of a run that its listing keeps as they are (hardware, model and engine are objects
# many runs share).
LISTED = ("id", "created_at", "finished_at", "status", "backend", "threads", "tags", "hardware", "model", "engine")
NEWEST_KEPT = 2  # of the runs that measured a test: a comparison page's two runs are among them


def listing(run: dict) -> dict:
    """A run as lists show it: its fields in :data:`LISTED`, its tests' names, its headline figures.
    A site holds every run's listing for the whole build: the words most runs share (status,
    backend, test names, tags) are held once each, not once per run."""
    listed = {key: run.get(key) for key in LISTED}
    listed["tests"] = [t["name"] for t in run["tests"]]
    listed["headline_figures"] = hubdata.headline_figures(run)
    listed["left_out"] = headline.left_out(run)  # why it gives no headline, counted wherever one is chosen
    return held_once(listed)


def held_once(listed: dict) -> dict:
    """A listing (made here, or read back from a cache) with its words held once each in the
    process, and its lists as tuples."""
    for key in ("status", "backend", "left_out"):
        listed[key] = _word(listed.get(key))
    if isinstance(listed["tags"], list):
        listed["tags"] = [_word(tag) for tag in listed["tags"]]
    listed["tests"] = tuple(_word(name) for name in listed["tests"])
    listed["headline_figures"] = tuple(listed["headline_figures"])
    for found in listed["headline_figures"]:
        if found:
            found["test"] = _word(found["test"])
    return listed


def _word(value):
    return sys.intern(value) if type(value) is str else value


def places(run: dict) -> list[list]:
    """[place, rate or None] of every place in its configuration the run may hold: the run with
    the highest rate there (where one is given), then the newest, holds it. One line each of the
    readers whose choice it mirrors. Lists, not tuples: a run's places are kept between builds as
    JSON (:mod:`pdx.reports.hub.bundle_cache`)."""
    found: list[list] = [[["newest"], None]]  # Group.latest
    # comparison.comparable_pair: its two runs are the newest two that measured some test.
    found += [[["shares", name], None] for name in sorted(comparison.measured(run))]
    threads = run.get("threads")
    valid = not headline.left_out(run)  # only a valid run can be a configuration's best
    for row in run_rows(run):
        if row.ok:
            found.append([["latest", threads, row.test, row.phase], None])  # figures.latest_rows, any namer
            if not row.part and valid:
                found.append([["best", row.phase, row.test], row.rate])  # Group.headline
    for test in figures.serving_tests(run):
        found.append([["serving", threads, test["name"]], None])  # figures.newest_serving
    if valid and hubdata.estimable(run):
        found.append([["estimate"], hubdata.estimate_rate(run)])  # hubdata.buy_data: the best run
    if valid and hubdata.classic_test(run):
        found.append([["classic"], None])  # hubdata.decode_vs_ceiling
    if run.get("ceiling_basis"):
        found.append([["basis"], None])  # a chip page's ceilings
    return found


def facts(run: dict) -> dict:
    """What a site reads of a run besides the run itself: its listing, its places, its candidate
    headline tests."""
    return {"listing": listing(run), "places": places(run), "headline": groups.headline_candidates(run)}


@dataclass
class _Config:
    listed: list = field(default_factory=list)  # (rank, listing)
    places: dict = field(default_factory=dict)  # place -> [(score, id)], best first
    kept: dict = field(default_factory=dict)  # id -> [rank, run, source, places held]


class SiteRuns:
    """A site's runs, given one at a time (:meth:`add`) in any order, then :meth:`finish`.

    ``keep_all`` keeps every run whole (the pages must come out the same: the test of
    :func:`places`)."""

    def __init__(self, keep_all: bool = False) -> None:
        self.keep_all = keep_all
        self.configs: dict = {}
        self.seen: set[str] = set()
        self.counter = HeadlineCounter()
        self.arrived = 0
        self.listed: list[dict] = []
        self.runs: list[dict] = []
        self.headline: dict[str, str] = {}
        self._sources: dict[str, object] = {}

    def add(self, run: dict, source=None) -> bool:
        """Take ``run`` (with its statistics); False, taking nothing, for an id given before.
        ``source``: where the run can be read whole again (:meth:`source`)."""
        return self.add_facts(facts(run), source, run)

    def add_facts(self, found: dict, source=None, run: dict | None = None) -> bool:
        """Take a run by its :func:`facts`; the run itself where it is at hand, else read through
        :meth:`finish`'s ``load`` if it is kept."""
        listed = found["listing"]
        if listed["id"] in self.seen:
            return False
        self.seen.add(listed["id"])
        # Newest first, and of runs made at one time the first given first, as a stable sort has them.
        rank = (listed["created_at"] or "", -self.arrived)
        self.arrived += 1
        self.counter.add_candidates(found["headline"], rank)
        config = self.configs.setdefault(groups.config_key(listed), _Config())
        config.listed.append((rank, listed))
        entry = [rank, run, source, 0]
        for place, rate in found["places"]:
            place = tuple(place)
            score = (-math.inf if rate is None else rate, rank)  # a place without rates: the newest
            held = config.places.setdefault(place, [])
            limit = NEWEST_KEPT if place[0] == "shares" else 1
            if len(held) < limit or score > held[-1][0]:
                held.append((score, listed["id"]))
                held.sort(reverse=True)
                entry[3] += 1
                if len(held) > limit:
                    self._let_go(config, held.pop()[1])
        if entry[3] or self.keep_all:
            config.kept[listed["id"]] = entry
        elif run is not None:
            forget_run(run)
        return True

    def _let_go(self, config: _Config, run_id: str) -> None:
        entry = config.kept[run_id]
        entry[3] -= 1
        if entry[3] == 0 and not self.keep_all:
            del config.kept[run_id]
            if entry[1] is not None:
                forget_run(entry[1])

    def finish(self, load=None) -> "SiteRuns":
        """Order what was given, newest first: ``listed`` every run's listing, ``runs`` the runs kept
        whole (``load(source, run id)`` reads those given by their facts alone), ``headline`` the
        site's headline tests."""
        listed = [item for config in self.configs.values() for item in config.listed]
        kept = [(run_id, entry) for config in self.configs.values() for run_id, entry in config.kept.items()]
        listed.sort(key=lambda item: item[0], reverse=True)
        kept.sort(key=lambda item: item[1][0], reverse=True)
        for run_id, entry in kept:
            if entry[1] is None:
                entry[1] = load(entry[2], run_id)
        self.listed = [item[1] for item in listed]
        self.runs = [entry[1] for _, entry in kept]
        self._sources = {run_id: entry[2] for run_id, entry in kept}
        self.headline = self.counter.tests()
        self.configs = {}
        return self

    def source(self, run: dict):
        """Where a kept run came from (what :meth:`add` was given)."""
        return self._sources[run["id"]]

    def groups(self, key) -> dict:
        """{key: :class:`Group`} of the kept runs and every listing, in the order of each group's
        newest run."""
        found: dict = {}
        for listed in self.listed:
            found.setdefault(key(listed), Group(key(listed), listed=[])).listed.append(listed)
        for run in self.runs:
            found[key(run)].runs.append(run)
        return found
