"""Load shapes: who sends what, when.

One driver covers them all. A *plan* yields requests in sending order, each
either "as soon as a slot is free" (closed loop: ``concurrency`` in flight,
the next sent when one ends) or "at offset t" (open loop: Poisson or gamma
arrivals, or a scripted scenario), with ``max_concurrency`` capping the
requests in flight either way. Warm-up requests run first, one at a time,
and are not counted. Once a connection is refused (the server is gone), no
further requests are sent.

Open loop, every request keeps its scheduled time beside its send time. When
the cap holds requests back (they come due while every slot is busy) and
slots then free together, the waiting requests do not burst out to catch up:
each is sent no sooner after the one before than its own drawn gap (the
arrival process holds on the wire), unless ``catch_up`` is asked. A request
the cap did not hold goes at its scheduled time, however late the one before.
An open-loop run stops early when the server is not keeping up (see :mod:`pdx.domain.serving.saturation`), and says so.
"""

from __future__ import annotations

import collections
import random
import resource
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

from pdx.contract.errors import PdxError
from pdx.measure.serving.http_stream import StreamLoop
from pdx.domain.serving.metrics import percentile
from pdx.measure.serving.openai import CompletionsClient
from pdx.domain.serving.records import RequestRecord
from pdx.domain.serving.saturation import SaturationWatch


@dataclass
class Planned:
    """One request to send: its prompt, how many tokens to generate, and when."""

    prompt: list[int]
    max_tokens: int
    role: str = "load"
    at_s: float | None = None  # offset from the start of the run; None: when a slot is free
    after_tokens: int | None = None  # or once every request in flight has received this many tokens
    session: str | None = None  # a conversation's turns share one: several client processes keep it on one
    think_s: float | None = None  # a later turn: sent no sooner than this long after its session's last ended


@dataclass
class LoadResult:
    records: list[RequestRecord]
    origin_ns: int  # perf_counter_ns at the start
    makespan_ns: int  # first send to last end
    cpu_s: float  # this process's CPU time (user + system) while the load ran
    wall_s: float
    saturation: dict | None = None  # why the run stopped early, when it did
    gave_up: dict | None = None  # or why it stopped once its verdict was certain (a give-up watch's word)
    late_p99_ns: int | None = None  # how late the client's timers (scheduled sends) ran, p99; None: none ran

    @property
    def failed(self) -> list[RequestRecord]:
        return [r for r in self.records if not r.ok]

    def client(self) -> dict:
        """What the client process itself did: its CPU (cores of its one), how late it ran its schedule."""
        return {"cpu_s": round(self.cpu_s, 4), "cores": round(self.cpu_s / self.wall_s, 3) if self.wall_s > 0 else None,
                "late_p99_ms": None if self.late_p99_ns is None else round(self.late_p99_ns / 1e6, 3)}


_POLL_NS = 2_000_000  # how often a token-triggered request checks its trigger
_MAX_BACKLOG = 100_000  # due requests counted ahead of sending at most (an endless plan at an infinite rate)


RAMP_FLOOR = 0.05  # a ramp-up starts at this fraction of the rate (from nothing, the first gap would be endless)


def arrivals(rate: float, burstiness: float = 1.0, seed: int = 0, ramp_s: float = 0.0) -> Iterator[float]:
    """Send offsets (s) of arrivals at ``rate`` per second: gamma gaps of shape
    ``burstiness`` (1: Poisson; below 1: burstier), as ``vllm bench serve`` draws
    them. An infinite rate sends everything at once. ``ramp_s``: the rate rises
    linearly from ``RAMP_FLOOR`` of itself to all of it over that long (each gap
    drawn at the rate of the moment it starts)."""
    if rate <= 0 or burstiness <= 0:
        raise PdxError("--request-rate and --burstiness must be above 0")
    rng = random.Random(seed)
    t = 0.0
    while True:
        yield t
        if rate != float("inf"):
            now = rate * max(RAMP_FLOOR, min(1.0, t / ramp_s)) if ramp_s else rate
            t += rng.gammavariate(burstiness, 1.0 / (now * burstiness))


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Driver:
    def __init__(self, client: CompletionsClient, plan: Iterator[Planned], cap: int | None,
                 loop: StreamLoop, catch_up: bool = False, watch: SaturationWatch | None = None,
                 give_up=None) -> None:
        self.client, self.plan, self.cap, self.loop = client, plan, cap, loop
        self.catch_up, self.watch, self.give_up = catch_up, watch, give_up
        self.gave_up: dict | None = None
        self.backlog: collections.deque[Planned] = collections.deque()  # planned, not yet sent
        self.exhausted = False
        self.records: list[RequestRecord] = []
        self.in_flight = 0
        self.origin = 0
        self.timer_at: int | None = None
        self.polling = False
        self.last: tuple[float, int] | None = None  # (scheduled offset s, send ns) of the last open-loop send
        self.saturation: dict | None = None
        self.freed_at: int | None = None  # when a slot last freed with every slot busy
        self.session_end: dict[str, int | None] = {}  # each session's last request's end (None: in flight)
        self.session_of: dict[int, str] = {}  # record idx -> its session, of requests in flight

    @property
    def next(self) -> Planned | None:
        if not self.backlog and not self.exhausted:
            self._pull()
        return self.backlog[0] if self.backlog else None

    def _pull(self) -> None:
        planned = next(self.plan, None)
        if planned is None:
            self.exhausted = True
        else:
            self.backlog.append(planned)

    def stop(self) -> None:
        """Send nothing more; the requests in flight finish."""
        self.backlog.clear()
        self.exhausted = True

    def due_waiting(self, now: int) -> int:
        """Requests whose scheduled time has passed but which are not sent yet (open loop)."""
        while not self.exhausted and len(self.backlog) < _MAX_BACKLOG and (
                not self.backlog or self._due(self.backlog[-1], now)):
            self._pull()
        return sum(self._due(p, now) for p in self.backlog)

    def _due(self, planned: Planned, now: int) -> bool:
        return planned.at_s is not None and self.origin + planned.at_s * 1e9 <= now

    def done(self) -> bool:
        return self.next is None and self.in_flight == 0

    def fill(self) -> None:
        now = time.perf_counter_ns()
        while self.next is not None and (self.cap is None or self.in_flight < self.cap):
            planned = self.next
            if planned.after_tokens is not None and any(
                    r.n_gen < planned.after_tokens and r.end_ns is None for r in self.records):
                if not self.polling:
                    self.polling = True
                    self.loop.call_at(now + _POLL_NS, self._poll)
                return
            if planned.think_s is not None and planned.session in self.session_end:
                ended = self.session_end[planned.session]
                if ended is None:  # the turn before is in flight: its end calls fill
                    return
                due = ended + int(planned.think_s * 1e9)
                if due > now:  # the user is thinking; the plan's next requests wait behind this one
                    if self.timer_at != due:
                        self.timer_at = due
                        self.loop.call_at(due, self.fill)
                    return
            if planned.at_s is not None:
                due = self.origin + int(planned.at_s * 1e9)
                held = self.freed_at is not None and due <= self.freed_at  # it came due while every slot was busy
                if held and not self.catch_up and self.last is not None:  # no burst: keep its own gap
                    due = max(due, self.last[1] + int((planned.at_s - self.last[0]) * 1e9))
                if due > now:
                    if self.timer_at != due:
                        self.timer_at = due
                        self.loop.call_at(due, self.fill)
                    return
            self.backlog.popleft()
            record = RequestRecord(idx=len(self.records), n_prompt=len(planned.prompt),
                                   max_tokens=planned.max_tokens, role=planned.role)
            if planned.at_s is not None:
                record.scheduled_ns = int(planned.at_s * 1e9)
            self.records.append(record)
            if planned.think_s is not None and planned.session is not None:
                self.session_end[planned.session] = None
                self.session_of[record.idx] = planned.session
            self.in_flight += 1
            self.client.send(self.loop, record, planned.prompt, self.origin, self.finished)
            if planned.at_s is not None:
                self.last = (planned.at_s, self.origin + record.send_ns)
            now = time.perf_counter_ns()

    def _poll(self) -> None:
        self.polling = False
        self.fill()

    def finished(self, record: RequestRecord) -> None:
        if self.cap is not None and self.in_flight >= self.cap:
            self.freed_at = time.perf_counter_ns()
        self.in_flight -= 1
        session = self.session_of.pop(record.idx, None)
        if session is not None:
            self.session_end[session] = time.perf_counter_ns()
        if record.error and record.error.startswith("cannot connect"):
            self.stop()  # the server is gone: the requests in flight finish, no new ones are sent
        elif self.watch is not None and record.scheduled_ns is not None and self.saturation is None:
            now = time.perf_counter_ns()
            ttft = record.ttft_sched_ns / 1e6 if record.ok and record.ttft_sched_ns is not None else None
            due = len(self.records) + self.due_waiting(now)
            self.saturation = self.watch.observe((now - self.origin) / 1e9, due, len(self.records) - self.in_flight,
                                                 ttft)
            if self.saturation is not None:
                self.saturation["unsent_due"] = self.due_waiting(now)
                self.stop()
        if self.give_up is not None and self.gave_up is None and not self.exhausted:
            self.gave_up = self.give_up.observe(record)
            if self.gave_up is not None:
                self.stop()
        self.fill()


def run_load(client: CompletionsClient, plan: Iterable[Planned], max_concurrency: int | None = None,
             warmup: Iterable[Planned] = (), catch_up: bool = False,
             saturation_window_s: float | None = None, give_up=None, start_ns: int | None = None) -> LoadResult:
    """Send ``plan`` (after ``warmup``, one at a time, uncounted) and return every request's record.

    ``catch_up``: late open-loop requests go as soon as a slot frees, however many at once.
    ``saturation_window_s``: stop an open-loop run early once it is over-saturated (None or 0: never).
    ``give_up``: an object whose ``observe(record)`` sees each request as it ends and returns a reason
    (a dict) once sending more would change nothing (:class:`pdx.domain.serving.capacity.SloWatch`); the
    requests in flight then finish, and no more are sent. ``start_ns``: the run's origin on the
    perf_counter clock, waited for (several client processes start one load together); None: now."""
    loop = StreamLoop()
    try:
        for planned in warmup:
            _run(client, iter([planned]), 1, loop)
        if start_ns is not None and (wait := start_ns - time.perf_counter_ns()) > 0:
            time.sleep(wait / 1e9)
        loop.lateness.clear()
        wall0, cpu0 = time.perf_counter_ns(), _cpu_seconds()
        watch = SaturationWatch(saturation_window_s) if saturation_window_s else None
        driver = _run(client, iter(plan), max_concurrency, loop, catch_up, watch, give_up, start_ns)
        cpu = _cpu_seconds() - cpu0
    finally:
        loop.close()
    records = driver.records
    ends = [r.send_ns + r.end_ns for r in records if r.end_ns is not None]
    makespan = max(ends) - min(r.send_ns for r in records) if records and ends else 0
    late = sorted(loop.lateness)
    return LoadResult(records, driver.origin, makespan, cpu, (time.perf_counter_ns() - wall0) / 1e9,
                      driver.saturation, driver.gave_up, round(percentile(late, 99)) if late else None)


def _run(client: CompletionsClient, plan: Iterator[Planned], cap: int | None, loop: StreamLoop,
         catch_up: bool = False, watch: SaturationWatch | None = None, give_up=None,
         origin_ns: int | None = None) -> _Driver:
    driver = _Driver(client, plan, cap, loop, catch_up, watch, give_up)
    driver.origin = time.perf_counter_ns() if origin_ns is None else origin_ns
    driver.fill()
    loop.run(driver.done)
    return driver


def closed_loop(prompts: Iterable[list[int]], max_tokens: int, role: str = "load") -> Iterator[Planned]:
    """Requests sent as slots free up (the concurrency is the driver's cap)."""
    for prompt in prompts:
        yield Planned(prompt, max_tokens, role)


def open_loop(prompts: Iterable[list[int]], max_tokens: int, rate: float, burstiness: float = 1.0,
              seed: int = 0, role: str = "load", duration_s: float | None = None,
              ramp_s: float = 0.0) -> Iterator[Planned]:
    """Requests arriving at ``rate`` per second, Poisson or gamma-distributed, for ``duration_s`` at most."""
    for prompt, at in zip(prompts, arrivals(rate, burstiness, seed, ramp_s)):
        if duration_s is not None and at >= duration_s:
            return
        yield Planned(prompt, max_tokens, role, at)


def shaped_loop(requests: Iterable[tuple[list[int], int, str, str | None]],
                arrival_times: Iterable[float] | None = None, duration_s: float | None = None,
                think_s: float | None = None) -> Iterator[Planned]:
    """Requests of a traffic shape (prompt, max_tokens, role, session), closed loop or at ``arrival_times``.
    ``think_s``: every turn of a conversation (a session) waits for the one before to end, then this long."""
    if arrival_times is None:
        for prompt, max_tokens, role, session in requests:
            yield Planned(prompt, max_tokens, role, session=session, think_s=think_s if session else None)
        return
    for (prompt, max_tokens, role, session), at in zip(requests, arrival_times):
        if duration_s is not None and at >= duration_s:
            return
        yield Planned(prompt, max_tokens, role, at, session=session, think_s=think_s if session else None)


def for_duration(plan: Iterable[Planned], seconds: float) -> Iterator[Planned]:
    """Stop sending new requests ``seconds`` after the first was sent (closed loop ``--duration``)."""
    started = None
    for planned in plan:
        now = time.perf_counter()
        started = started if started is not None else now
        if now - started >= seconds:
            return
        yield planned
