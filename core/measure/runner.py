"""The runner: drives a loaded backend through the tests, one at a time,
and hands each finished test to ``save`` before starting the next, so an
interruption loses nothing: the test in flight is saved with the
repetitions it completed, marked interrupted.

With a :class:`~pdx.domain.adaptive.StopRule` the runner keeps calling
``backend.run(test, more, warmup=0)`` after the first batch until the rule
is satisfied; warm-up runs only precede the first batch.

Each test's conditions (:mod:`pdx.measure.conditions`) are read over the test's own
window, warm-up included; ``delay`` seconds of idle precede every test
but the first (a cool-down, as llama-bench's ``--delay``). With a
:class:`~pdx.measure.energy.session.Metering`, the idle power is read before the
first test and each test's energy over its samples' timed windows; a test
too short for its meters gets more repetitions first."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Callable, Sequence

from pdx.measure import conditions
from pdx.domain.adaptive import StopRule
from pdx.contract.backend import Backend, Sample
from pdx.contract import build, record
from pdx.measure.energy.session import MAX_LENGTHEN, Metering
from pdx.contract.errors import PdxError, interruption
from pdx.contract.request import RequestRecord
from pdx.registry.fields import REQUEST_COLUMNS, SAMPLE_FIELDS, TEST_OBJECTS
from pdx.registry.records import iso
from pdx.domain.workload import TestSpec


def now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(slots=True)  # a misspelt field set on an outcome raises, never goes unstored
class TestOutcome:
    """One finished, failed, skipped or interrupted test, ready to store."""

    __test__ = False  # not a pytest class

    ordinal: int
    test: TestSpec
    warmup: int
    samples: list[Sample] = field(default_factory=list)
    started_at: datetime = field(default_factory=now)
    finished_at: datetime | None = None
    status: str = "ok"  # ok, failed, skipped, interrupted
    error: str | None = None
    engine: dict = field(default_factory=dict)
    ceilings: record.Ceilings | None = None  # filled in before saving (pdx.domain.ceilings.test_ceilings)
    adaptive: dict | None = None  # the stop rule's record, for adaptive runs
    requests: list = field(default_factory=list)  # requests that failed before making a sample
    conditions: record.Conditions | None = None  # what the machine did meanwhile (pdx.measure.conditions.measure)
    # joules over the timed windows (pdx.measure.energy.session), where meters exist
    energy: record.Energy | None = None
    lengthened: int = 0  # repetitions added so the meters could read the test
    batches: list[int] = field(default_factory=list)  # samples of each backend.run call, in order (not stored)

    def to_record(self) -> record.Test:
        """This test as a record's ``tests`` entry (the shape ``pdx show --json`` prints), what the
        registry stores and checks as it does every record's: the runner's objects never reach it."""
        test = self.test
        owned: list[tuple[int | None, RequestRecord]] = [(i, r) for i, s in enumerate(self.samples)
                                                         for r in s.requests]
        owned += [(None, r) for r in self.requests]
        # What the runner measured of each test object; a column only importers fill (this class has no
        # such field) is None.
        objects = {k: getattr(self, k, None) for k in TEST_OBJECTS if k != "engine"}
        return build.test(
            test, [s.to_record() for s in self.samples], ordinal=self.ordinal, started_at=iso(self.started_at),
            finished_at=iso(self.finished_at or now()), status=self.status, error=self.error, warmup=self.warmup,
            engine=self.engine, **objects | {"spec": test.to_dict() if test.kind == "serve" else {}},
            # Every stored request field is the runner's (pdx.contract.request.RequestRecord): a column it
            # lacks fails here, not as a silent None.
            requests=[{"sample_idx": i} | {k: getattr(r, k) for k in REQUEST_COLUMNS if k != "sample_idx"}
                      | {"events": [list(e) for e in r.events]} for i, r in owned])


@dataclass
class Progress:
    """Callbacks the CLI uses to show progress; all optional."""

    test_started: Callable[[int, TestSpec], None] = lambda i, t: None
    sample_done: Callable[[int, TestSpec, Sample], None] = lambda i, t, s: None
    test_done: Callable[[TestOutcome], None] = lambda o: None
    warning: Callable[[str], None] = lambda text: None  # said before the tests start (e.g. a model too big)


# The sample fields a backend gives by name in Sample.figures: those the record declares beyond Sample's own.
FIGURES = set(SAMPLE_FIELDS) - {f.name for f in fields(Sample)}


def check_sample(test: TestSpec, sample: Sample, since_ns: int | None = None) -> None:
    """Enforce the contract: positive times, exactly the tokens the test names, and an end (where the
    backend gives one) within the call that measured it (``since_ns`` until now)."""
    if sample.ns <= 0:
        raise PdxError(f"{test.name}: backend reported a non-positive time ({sample.ns} ns)")
    ended = sample.ended_ns
    if ended is not None and since_ns is not None and (
            type(ended) is not int or not since_ns <= ended <= time.monotonic_ns()):
        raise PdxError(f"{test.name}: backend said a repetition ended at {ended!r}, outside the run() call that "
                       "measured it; set Sample.ended_ns from time.monotonic_ns(), or leave it None")
    unknown = sorted(set(sample.figures) - FIGURES)
    if unknown:
        raise PdxError(f"{test.name}: backend gave a sample figure {unknown[0]!r} that no stored sample has; "
                       f"declare it in pdx.contract.record.Sample (with its migration), or keep it in Sample.engine")
    want = test.expected_tokens()
    if want is not None and (sample.n_prompt, sample.n_gen) != want:
        raise PdxError(
            f"{test.name}: backend processed {sample.n_prompt} prompt + {sample.n_gen} generated tokens, "
            f"the test needs {want[0]} + {want[1]}"
        )


def _collect(backend: Backend, outcome: TestOutcome, count: int, warmup: int, progress: Progress) -> None:
    test, before = outcome.test, len(outcome.samples)
    since = time.monotonic_ns()
    for sample in backend.run(test, count, warmup):
        check_sample(test, sample, since)
        if sample.ended_ns is None:
            sample.ended_ns = time.monotonic_ns()
        outcome.samples.append(sample)
        progress.sample_done(outcome.ordinal, test, sample)
    got = len(outcome.samples) - before
    outcome.batches.append(got)
    if got != count:
        raise PdxError(f"{test.name}: backend returned {got} samples, not {count}")


def _lengthen(backend: Backend, outcome: TestOutcome, progress: Progress, metering: Metering) -> None:
    """More repetitions until the meters can read the test (a few batches at most)."""
    for _ in range(MAX_LENGTHEN):
        more = metering.more(outcome.samples, outcome.batches)
        if not more:
            return
        _collect(backend, outcome, more, 0, progress)
        outcome.lengthened += more


def _measure(backend: Backend, outcome: TestOutcome, repetitions: int, progress: Progress,
             rule: StopRule | None, metering: Metering | None = None) -> None:
    test = outcome.test
    reason = backend.unsupported(test)
    if reason:
        outcome.status, outcome.error = "skipped", reason
        return
    try:
        _collect(backend, outcome, repetitions, outcome.warmup, progress)
        calls = 1
        while rule and (more := rule.more(test, outcome.samples)):
            _collect(backend, outcome, more, 0, progress)  # a continuation: the engine is warm
            calls += 1
        if rule:
            outcome.adaptive = rule.record(test, outcome.samples, calls)
        if metering and test.kind != "serve":  # a serving scenario is not repeated for its meters' sake
            _lengthen(backend, outcome, progress, metering)
    except PdxError as exc:
        outcome.status, outcome.error = "failed", str(exc)
        outcome.requests.extend(getattr(exc, "requests", ()))


def _energy(metering: Metering | None, outcome: TestOutcome) -> record.Energy | None:
    if not metering:
        return None
    try:
        return metering.record(outcome.samples, outcome.batches, outcome.lengthened)
    except Exception:  # energy never blocks a benchmark, nor stops its test from being saved
        return None


def run_tests(
    backend: Backend,
    tests: Sequence[TestSpec],
    repetitions: int,
    warmup: int,
    save: Callable[[TestOutcome], None],
    progress: Progress | None = None,
    rule: StopRule | None = None,
    delay: float = 0.0,
    metering: Metering | None = None,
) -> list[TestOutcome]:
    progress = progress or Progress()
    if metering:
        metering.start()
    try:
        return _run_each(backend, tests, repetitions, warmup, save, progress, rule, delay, metering)
    finally:
        if metering:
            metering.stop()


def _run_each(backend, tests, repetitions, warmup, save, progress, rule, delay, metering) -> list[TestOutcome]:
    outcomes: list[TestOutcome] = []
    for ordinal, test in enumerate(tests):
        cooldown = delay if ordinal else 0.0
        time.sleep(cooldown)
        progress.test_started(ordinal, test)
        outcome = TestOutcome(ordinal=ordinal, test=test, warmup=warmup)
        start = conditions.snapshot()
        try:
            _measure(backend, outcome, repetitions, progress, rule, metering)
        except KeyboardInterrupt as exc:
            outcome.status, outcome.error = "interrupted", interruption(exc)
            raise
        finally:
            outcome.finished_at = now()
            outcome.conditions = conditions.measure(start, cooldown)
            outcome.engine = backend.test_info()
            outcome.energy = _energy(metering, outcome)
            save(outcome)
            outcomes.append(outcome)
            progress.test_done(outcome)
    return outcomes


def run_interleaved(
    backends: Sequence[Backend],
    tests: Sequence[TestSpec],
    repetitions: int,
    warmup: int,
    saves: Sequence[Callable[[TestOutcome], None]],
    progress: Progress | None = None,
    delay: float = 0.0,
) -> list[list[TestOutcome]]:
    """Each test on every backend, one repetition at a time in turn (A B A B ...), so that a drift of
    the machine over the test (heat, a neighbour's load) falls on every backend alike rather than on
    whichever ran last. Each repetition is a call of its own, after the test's ``warmup`` runs, as the
    first call of a test is in :func:`run_tests`. A backend whose test fails stops that test there; the
    others go on. Returns each backend's outcomes, in ``backends``' order; each is saved as it ends."""
    progress = progress or Progress()
    done: list[list[TestOutcome]] = [[] for _ in backends]
    for ordinal, test in enumerate(tests):
        cooldown = delay if ordinal else 0.0
        time.sleep(cooldown)
        progress.test_started(ordinal, test)
        outcomes = [TestOutcome(ordinal=ordinal, test=test, warmup=warmup) for _ in backends]
        for backend, outcome in zip(backends, outcomes):
            reason = backend.unsupported(test)
            if reason:
                outcome.status, outcome.error = "skipped", reason
        start = conditions.snapshot()
        try:
            for _ in range(repetitions):
                for backend, outcome in zip(backends, outcomes):
                    if outcome.status != "ok":
                        continue
                    try:
                        _collect(backend, outcome, 1, warmup, progress)
                    except PdxError as exc:
                        outcome.status, outcome.error = "failed", str(exc)
                        outcome.requests.extend(getattr(exc, "requests", ()))
        except KeyboardInterrupt as exc:
            for outcome in outcomes:
                if outcome.status == "ok":
                    outcome.status, outcome.error = "interrupted", interruption(exc)
            raise
        finally:
            measured = conditions.measure(start, cooldown)
            for backend, outcome, save, kept in zip(backends, outcomes, saves, done):
                outcome.finished_at = now()
                outcome.conditions = measured.copy() if measured is not None else None  # each run's own
                outcome.engine = backend.test_info()
                save(outcome)
                kept.append(outcome)
                progress.test_done(outcome)
    return done
