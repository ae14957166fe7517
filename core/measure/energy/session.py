"""Energy measured around a benchmark: the meters found, a power trace over the run, the idle
power before its first test, and each test's record.

The runner hands every test's samples here once they are measured, with the size of each batch
it asked the backend for (one ``run`` call: repetitions back to back); a sample's timed window is
``[ended_ns - ns, ended_ns]`` on the monotonic clock (the backend says when its timed part ended,
or the runner stamps the moment the sample reached it). Between the trace's readings a counter is
interpolated, so each edge of a run of back-to-back windows can be off by up to a step: a batch is
read only if its timed time spans :data:`pdx.domain.energy.figures.MIN_STEPS` steps of the coarsest
meter. A test whose batches are all shorter gets one more batch that long on its own (a batch of a
subprocess engine is a new process, and the gaps between batches would add edges); the record
says how many repetitions were added and which were read, and says ``coarse`` when none was long
enough (all are read then). Idle power is read with the model loaded and nothing running, for
:data:`IDLE_S` seconds (longer where a meter steps slowly), so "net" figures are what the work
added to a machine that was already on.

Energy never blocks a benchmark: a meter that fails is dropped from the trace with its reason,
and a test whose windows the trace cannot cover stores no energy.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from pdx.contract.record import Energy
from pdx.domain.energy.figures import DEFAULT_CURRENCY, DEFAULT_PRICE_KWH, ENERGY_VERSION, MIN_STEPS, short_of
from pdx.contract.meter import Meter, MeterUnavailable, check_meter
from pdx.measure.energy.trace import Trace

IDLE_S = 2.0
MAX_IDLE_S = 10.0
MAX_LENGTHEN = 3  # batches of repetitions added to a test too short for its meters
MARGIN = 1.5  # an added batch is this much longer than the meters need
MAX_ADDED = 1000  # repetitions in one such batch: a meter that steps too slowly for the test is said, not chased


@dataclass
class Found:
    """The meters of this machine, and why each source found none."""

    meters: list[Meter] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # source -> why
    install: dict[str, str] = field(default_factory=dict)  # source -> what to install, where relevant

    def to_dict(self) -> dict:
        return {"meters": [m.describe() for m in self.meters], "missing": dict(self.missing),
                "install": dict(self.install)}


def find(sources) -> Found:
    """Ask every meter source for its meters; a source that fails says why and the others go on."""
    found = Found()
    names: set[str] = set()
    for source in sources:
        try:
            meters = [check_meter(m, source.name) for m in source.find()]
        except MeterUnavailable as exc:
            found.missing[source.name] = str(exc)
            if "not installed" in str(exc) and source.install:
                found.install[source.name] = source.install
            continue
        except Exception as exc:  # a plugin's bug must not stop a benchmark
            found.missing[source.name] = f"failed: {type(exc).__name__}: {exc}"
            continue
        for meter in meters:
            if meter.name not in names:
                names.add(meter.name)
                found.meters.append(meter)
    whole = [m for m in found.meters if m.covers == "machine"]
    if whole:  # the whole machine's meter already counts every part's joules
        for meter in found.meters:
            if meter.covers != "machine":
                found.missing[meter.name] = "counted by the machine's own meter"
        found.meters = whole
    return found


def windows(samples) -> list[tuple[int, int]]:
    return [(s.ended_ns - s.ns, s.ended_ns) for s in samples if getattr(s, "ended_ns", None)]


def batches_of(samples, batches: list[int]) -> list[list[int]]:
    """The indices of ``samples`` batch by batch (``batches``: each batch's size, in order)."""
    out, start = [], 0
    for size in batches:
        out.append(list(range(start, min(start + size, len(samples)))))
        start += size
    out.append(list(range(start, len(samples))))  # a batch cut short by a failure
    return [b for b in out if b]


def _timed_s(samples, indices) -> float:
    return sum(samples[i].ns for i in indices if getattr(samples[i], "ended_ns", None)) / 1e9


class Metering:
    """A run's energy measurement: :meth:`start` before the first test, :meth:`record` per test,
    :meth:`stop` at the end."""

    def __init__(self, meters: list[Meter], price_kwh: float = DEFAULT_PRICE_KWH,
                 currency: str = DEFAULT_CURRENCY, price_said: str = "default", idle_s: float = IDLE_S) -> None:
        self.trace = Trace(meters)
        self.price = {"price_kwh": price_kwh, "currency": currency, "price_said": price_said}
        self.idle_s = idle_s
        self.idle: dict[str, float] | None = None
        self.idle_window: tuple[int, int] | None = None

    def start(self) -> None:
        self.trace.start()
        start = time.monotonic_ns()
        time.sleep(self.idle_s)
        wait = min(MAX_IDLE_S, MIN_STEPS * self.trace.resolution_s()) - self.idle_s
        if wait > 0:  # a slow counter needs a longer look at idle
            time.sleep(wait)
        end = time.monotonic_ns()
        self.trace.read_now()  # a reading at or after the end
        joules = self.trace.joules([(start, end)])
        if joules is not None:
            seconds = (end - start) / 1e9
            self.idle = {name: j / seconds for name, j in joules.items()}
            self.idle_window = (start, end)

    def stop(self) -> None:
        self.trace.stop()

    def more(self, samples, batches: list[int]) -> int:
        """The size of one more batch the meters need to read the test (0: a batch is long enough already,
        or nothing to go on)."""
        timed = [s.ns for s in samples if getattr(s, "ended_ns", None)]
        resolution = self.trace.resolution_s()
        if not timed or any(not short_of(_timed_s(samples, b), resolution) for b in batches_of(samples, batches)):
            return 0
        wanted = MARGIN * short_of(0.0, resolution)  # a busy machine's trace steps a little slower than it did
        return min(MAX_ADDED, math.ceil(wanted / (sum(timed) / len(timed) / 1e9)))

    def record(self, samples, batches: list[int] | None = None, lengthened: int = 0) -> Energy | None:
        """The test's energy record, from its batches long enough to read (None when no sample's window lies
        in the trace)."""
        resolution = self.trace.resolution_s()
        groups = batches_of(samples, batches or [len(samples)])
        readable = [b for b in groups if not short_of(_timed_s(samples, b), resolution)]
        read = [i for b in (readable or groups) for i in b]
        spans = windows([samples[i] for i in read])
        if not spans:
            return None
        self.trace.read_now()  # a reading after the last window's end
        joules = self.trace.joules(spans)
        if joules is None:
            return None
        dropped = dict(self.trace.failed)
        kept = {name: j for name, j in joules.items() if name not in dropped}
        if not kept:
            return None
        timed = sum(end - start for start, end in spans) / 1e9
        self.trace.forget_before(max(end for _, end in spans))
        return {
            "version": ENERGY_VERSION,
            "meters": [m.describe() for m in self.trace.meters if m.name in kept],
            "joules": kept,
            "timed_s": timed,
            "idle_watts": {k: v for k, v in (self.idle or {}).items() if k in kept} or None,
            "idle_s": (self.idle_window[1] - self.idle_window[0]) / 1e9 if self.idle_window else None,
            "resolution_s": resolution,
            "lengthened": lengthened,
            "samples_read": read if len(read) < len(samples) else None,  # None: every sample's windows
            "coarse": not readable,
            "dropped": dropped or None,
            **self.price,
        }
