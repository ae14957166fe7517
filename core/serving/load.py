"""Load shapes: who sends what, when.

One driver covers them all. A *plan* yields requests in sending order, each
either "as soon as a slot is free" (closed loop: ``concurrency`` in flight,
the next sent when one ends) or "at offset t" (open loop: Poisson or gamma
arrivals, or a scripted scenario), with ``max_concurrency`` capping the
requests in flight either way. Warm-up requests run first, one at a time,
and are not counted. Once a connection is refused (the server is gone), no
further requests are sent.
"""

from __future__ import annotations

import random
import resource
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

from pdx.errors import PdxError
from pdx.serving.http_stream import StreamLoop
from pdx.serving.openai import CompletionsClient
from pdx.serving.records import RequestRecord


@dataclass
class Planned:
    """One request to send: its prompt, how many tokens to generate, and when."""

    prompt: list[int]
    max_tokens: int
    role: str = "load"
    at_s: float | None = None  # offset from the start of the run; None: when a slot is free
    after_tokens: int | None = None  # or once every request in flight has received this many tokens


@dataclass
class LoadResult:
    records: list[RequestRecord]
    origin_ns: int  # perf_counter_ns at the start
    makespan_ns: int  # first send to last end
    cpu_s: float  # this process's CPU time (user + system) while the load ran
    wall_s: float

    @property
    def failed(self) -> list[RequestRecord]:
        return [r for r in self.records if not r.ok]


_POLL_NS = 2_000_000  # how often a token-triggered request checks its trigger


def arrivals(rate: float, burstiness: float = 1.0, seed: int = 0) -> Iterator[float]:
    """Send offsets (s) of arrivals at ``rate`` per second: gamma gaps of shape
    ``burstiness`` (1: Poisson; below 1: burstier), as ``vllm bench serve`` draws
    them. An infinite rate sends everything at once."""
    if rate <= 0 or burstiness <= 0:
        raise PdxError("--request-rate and --burstiness must be above 0")
    rng = random.Random(seed)
    theta = 1.0 / (rate * burstiness)
    t = 0.0
    while True:
        yield t
        if rate != float("inf"):
            t += rng.gammavariate(burstiness, theta)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Driver:
    def __init__(self, client: CompletionsClient, plan: Iterator[Planned], cap: int | None,
                 loop: StreamLoop) -> None:
        self.client, self.plan, self.cap, self.loop = client, plan, cap, loop
        self.next: Planned | None = next(plan, None)
        self.records: list[RequestRecord] = []
        self.in_flight = 0
        self.origin = 0
        self.timer_at: int | None = None
        self.polling = False

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
            if planned.at_s is not None:
                due = self.origin + int(planned.at_s * 1e9)
                if due > now:
                    if self.timer_at != due:
                        self.timer_at = due
                        self.loop.call_at(due, self.fill)
                    return
            self.next = next(self.plan, None)
            record = RequestRecord(idx=len(self.records), n_prompt=len(planned.prompt),
                                   max_tokens=planned.max_tokens, role=planned.role)
            self.records.append(record)
            self.in_flight += 1
            self.client.send(self.loop, record, planned.prompt, self.origin, self.finished)
            now = time.perf_counter_ns()

    def _poll(self) -> None:
        self.polling = False
        self.fill()

    def finished(self, record: RequestRecord) -> None:
        self.in_flight -= 1
        if record.error and record.error.startswith("cannot connect"):
            self.next = None  # the server is gone: the requests in flight finish, no new ones are sent
        self.fill()


def run_load(client: CompletionsClient, plan: Iterable[Planned], max_concurrency: int | None = None,
             warmup: Iterable[Planned] = ()) -> LoadResult:
    """Send ``plan`` (after ``warmup``, one at a time, uncounted) and return every request's record."""
    loop = StreamLoop()
    try:
        for planned in warmup:
            _run(client, iter([planned]), 1, loop)
        wall0, cpu0 = time.perf_counter_ns(), _cpu_seconds()
        driver = _run(client, iter(plan), max_concurrency, loop)
        cpu = _cpu_seconds() - cpu0
    finally:
        loop.close()
    records = driver.records
    ends = [r.send_ns + r.end_ns for r in records if r.end_ns is not None]
    makespan = max(ends) - min(r.send_ns for r in records) if records and ends else 0
    return LoadResult(records, driver.origin, makespan, cpu, (time.perf_counter_ns() - wall0) / 1e9)


def _run(client: CompletionsClient, plan: Iterator[Planned], cap: int | None, loop: StreamLoop) -> _Driver:
    driver = _Driver(client, plan, cap, loop)
    driver.origin = time.perf_counter_ns()
    driver.fill()
    loop.run(driver.done)
    return driver


def closed_loop(prompts: Iterable[list[int]], max_tokens: int, role: str = "load") -> Iterator[Planned]:
    """Requests sent as slots free up (the concurrency is the driver's cap)."""
    for prompt in prompts:
        yield Planned(prompt, max_tokens, role)


def open_loop(prompts: Iterable[list[int]], max_tokens: int, rate: float, burstiness: float = 1.0,
              seed: int = 0, role: str = "load", duration_s: float | None = None) -> Iterator[Planned]:
    """Requests arriving at ``rate`` per second, Poisson or gamma-distributed, for ``duration_s`` at most."""
    for prompt, at in zip(prompts, arrivals(rate, burstiness, seed)):
        if duration_s is not None and at >= duration_s:
            return
        yield Planned(prompt, max_tokens, role, at)


def for_duration(plan: Iterable[Planned], seconds: float) -> Iterator[Planned]:
    """Stop sending new requests ``seconds`` after the first was sent (closed loop ``--duration``)."""
    started = None
    for planned in plan:
        now = time.perf_counter()
        started = started if started is not None else now
        if now - started >= seconds:
            return
        yield planned
