"""Serving scenarios as tests: what one ``pdx serve-bench`` test sends.

A :class:`ServeSpec` sits in a workload beside the pp/tg ``TestSpec`` and is
stored the same way (its parameters in the test's ``spec``). Scenarios:

- ``load``: requests of ``n_prompt`` tokens generating ``n_gen``, either
  closed loop (``concurrency`` in flight) or open loop (``rate`` per second,
  Poisson or gamma with ``burstiness``, capped by ``max_concurrency``), for
  ``n_requests`` requests or ``duration_s`` seconds. A concurrency sweep is
  one ``load`` test per concurrency.
- ``stall``: ``concurrency`` steady decode streams, then, once they are
  decoding, one prompt of ``inject`` tokens: how long do the streams stall?
- ``cache-cold`` / ``cache-warm``: prompts that share no prefix (the server's
  prefix-cache hit counter must stay flat), then prompts sharing a ``prefix``
  of their tokens, warmed first: the TTFT saving.
- ``capacity``: the largest request rate (open loop; ``rate`` the start) or
  concurrency (closed loop; ``concurrency`` the start) at which the ``slo``
  holds at ``slo_percentile``, by a bracketing search to ``precision``
  (:mod:`pdx.domain.serving.capacity`); each point sends ``n_requests`` requests.
- ``overhead``: ``n_requests`` one-token requests of ``n_prompt`` tokens, one
  at a time, each also prefilled by the engine in pdx's own process (the
  server backend's in-process sibling, same model, threads and prompt ids):
  TTFT split into the engine's prefill and the server's own part.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field

from pdx.contract.record import TEST_NAME_MAX
from pdx.contract.errors import WorkloadError
from pdx.domain.serving.capacity import DEFAULT_BUDGET_S, DEFAULT_MAX_POINTS, DEFAULT_PERCENTILE, DEFAULT_PRECISION
from pdx.domain.serving.metrics import DEFAULT_PERCENTILES
from pdx.domain.serving.saturation import DEFAULT_WINDOW_S
from pdx.domain.serving.traffic import Lengths, Shape

SCENARIOS = ("load", "stall", "cache-cold", "cache-warm", "capacity", "overhead")
MAX_CLIENTS = 256


def _number(value: float) -> str:
    return f"{value:g}" if value != float("inf") else "inf"


MAX_THINK_S = 3600.0  # a pause between turns: past an hour no cache is still holding the prefix

@dataclass(frozen=True)
class ServeSpec:
    scenario: str
    n_prompt: int
    n_gen: int
    concurrency: int | None = None
    rate: float | None = None
    burstiness: float = 1.0
    max_concurrency: int | None = None
    n_requests: int | None = None
    duration_s: float | None = None
    inject: int = 0  # stall: the long prompt's tokens
    prefix: int = 0  # cache-warm: tokens every prompt shares
    warmup_requests: int = 1
    catch_up: bool = False  # open loop: late requests go as soon as a slot frees, bursting if need be
    saturation_window_s: float = DEFAULT_WINDOW_S  # open loop: stop once over-saturated over this window (0: never)
    slo: dict = field(default_factory=dict, compare=False, hash=False)  # metric -> ms
    slo_percentile: float = DEFAULT_PERCENTILE  # capacity: the percentile the SLO is judged at
    precision: float = DEFAULT_PRECISION  # capacity: stop once hi / lo - 1 is at most this
    max_points: int = DEFAULT_MAX_POINTS  # capacity: points of the search before the two repeats
    budget_s: float = DEFAULT_BUDGET_S  # capacity: no new point after this long (0: no limit)
    # Traffic shape (pdx.domain.serving.traffic), load and capacity tests:
    system_prompt: int = 0  # tokens of a system prompt every request starts with
    turns: int = 1  # turns per conversation (each sends the history and a new user part)
    input_dist: str = "fixed"  # user-part lengths around n_prompt: fixed, uniform:S, lognormal:SIGMA
    output_dist: str = "fixed"  # generated lengths around n_gen
    ramp_s: float = 0.0  # open loop: the rate rises linearly to ``rate`` over this long
    think_s: float | None = None  # multi-turn: each turn waits for the one before to end, then this long (s)
    trace: str | None = None  # a JSONL trace replayed instead (its path, as given)
    trace_sha256: str | None = None
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    clients: int = 1  # client processes the load is split over (pdx.measure.serving.shards)
    client_pool: str = "local"  # where they run: "local" (this machine) or "ray" (actors over a cluster)
    ray_address: str | None = field(default=None, compare=False)  # where the Ray cluster is; never stored
    depth: int = 0  # the columns every test has
    kind: str = "serve"

    def __post_init__(self) -> None:
        if self.scenario not in SCENARIOS:
            raise WorkloadError(f"unknown scenario {self.scenario!r}; choose one of: {', '.join(SCENARIOS)}")
        if self.n_prompt < 1 or self.n_gen < 1:
            raise WorkloadError(f"{self.scenario}: requests need at least 1 prompt and 1 generated token")
        if self.turns < 1 or self.system_prompt < 0 or self.ramp_s < 0:
            raise WorkloadError("turns must be at least 1, the system prompt and the ramp-up 0 or more")
        for flag, text in (("--input-dist", self.input_dist), ("--output-dist", self.output_dist)):
            Lengths.parse(text, flag)
        if self.think_s is not None and (self.turns < 2 or not 0 <= self.think_s <= MAX_THINK_S):
            raise WorkloadError(f"--think-time {self.think_s}: a pause between a conversation's turns, 0 to "
                                f"{MAX_THINK_S:g} s, with --turns 2 or more")
        if self.ramp_s and self.rate is None:
            raise WorkloadError("--ramp-up needs an open loop (--request-rate)")
        if self.trace is not None and (self.rate is not None or self.concurrency is not None
                                       or self.scenario != "load"):
            raise WorkloadError("a trace sets its own arrivals: give --trace without -c or --request-rate")
        if self.scenario == "capacity":
            if not self.slo:
                raise WorkloadError("capacity: give the SLO to hold (--slo ttft=2s,itl=200ms[,p=99])")
            if self.concurrency is not None and self.rate is not None:
                raise WorkloadError("capacity: search a concurrency (closed loop) or a request rate (open loop), "
                                    "not both")
            if self.rate == float("inf"):
                raise WorkloadError("capacity: start the search at a finite request rate")
            if not 0 < self.precision < 10 or self.max_points < 2:
                raise WorkloadError(f"capacity: the precision must be above 0 (not {self.precision}) "
                                    f"and at least 2 points allowed (not {self.max_points})")
        if (self.concurrency is None) == (self.rate is None) and self.scenario == "load" and self.trace is None:
            raise WorkloadError("a load test needs a concurrency (closed loop) or a request rate (open loop)")
        if self.concurrency is not None and self.concurrency < 1:
            raise WorkloadError(f"concurrency must be at least 1, not {self.concurrency}")
        if (self.n_requests is None and self.duration_s is None and self.scenario not in ("stall", "capacity")
                and self.trace is None):
            raise WorkloadError(f"{self.scenario}: give a number of requests or a duration")
        if self.scenario == "overhead" and (self.n_requests is None or self.n_gen != 1):
            raise WorkloadError("overhead: one-token requests, a number of them (--num-requests)")
        if self.scenario == "stall" and self.concurrency is None:
            raise WorkloadError("the stall scenario needs its steady decode streams (-c N)")
        if self.scenario == "stall" and self.inject < 1:
            raise WorkloadError("the stall scenario needs a long prompt to inject (--inject N)")
        if self.saturation_window_s < 0:
            raise WorkloadError(f"the over-saturation window must be 0 (off) or more seconds, not "
                                f"{self.saturation_window_s}")
        if not 1 <= self.clients <= MAX_CLIENTS or self.client_pool not in ("local", "ray"):
            raise WorkloadError(f"--clients: 1 to {MAX_CLIENTS} client processes, not {self.clients}")
        if self.clients > 1:
            if self.scenario != "load":
                raise WorkloadError(f"--clients: a {self.scenario} test is one client's by design; split load and "
                                    "sweep tests only")
            split = self.concurrency if self.concurrency is not None else self.max_concurrency
            if split is not None and split < self.clients:
                raise WorkloadError(f"--clients {self.clients}: each client needs a request in flight; the cap is "
                                    f"{split}")
        if self.scenario == "cache-warm" and not 0 < self.prefix < self.n_prompt:
            raise WorkloadError(f"cache-warm: the shared prefix ({self.prefix}) must be shorter than the prompt")

    @property
    def shape(self) -> Shape:
        return Shape(self.n_prompt, self.n_gen, self.system_prompt, self.turns,
                     Lengths.parse(self.input_dist, "--input-dist"), Lengths.parse(self.output_dist, "--output-dist"))

    def _traffic(self) -> str:
        """The name's suffix for a traffic shape other than the plain one."""
        parts = [f"sys{self.system_prompt}" if self.system_prompt else "",
                 f"turns{self.turns}" if self.turns > 1 else "",
                 f"in-{self.input_dist}" if self.input_dist != "fixed" else "",
                 f"out-{self.output_dist}" if self.output_dist != "fixed" else "",
                 f"ramp{_number(self.ramp_s)}s" if self.ramp_s else "",
                 f"think{_number(self.think_s)}s" if self.think_s is not None else ""]
        return "".join(f":{p}" for p in parts if p)

    @property
    def batch(self) -> int:
        return self.concurrency or self.max_concurrency or 1

    @property
    def name(self) -> str:
        """The test's name: its parameters, cut to fit the registry with a hash of the whole when they are
        many (the spec keeps every one of them)."""
        full = self._name() + self._traffic()
        if len(full) <= TEST_NAME_MAX:
            return full
        return f"{full[:TEST_NAME_MAX - 9]}~{hashlib.sha256(full.encode()).hexdigest()[:8]}"

    def _name(self) -> str:
        shape = f"p{self.n_prompt}+g{self.n_gen}"
        if self.scenario == "stall":
            return f"stall:c{self.concurrency}:{shape}:inject{self.inject}"
        count = f"n{self.n_requests}" if self.n_requests is not None else (
            f"{_number(self.duration_s)}s" if self.duration_s is not None else "auto")
        if self.scenario == "cache-cold":
            return f"cache-cold:{shape}:{count}"
        if self.scenario == "overhead":
            return f"overhead:p{self.n_prompt}:{count}"
        if self.scenario == "cache-warm":
            return f"cache-warm:{shape}:prefix{self.prefix}:{count}"
        if self.scenario == "capacity":
            slo = "+".join(f"{k}{_number(v)}" for k, v in self.slo.items())
            axis = f"c{self.concurrency}" if self.concurrency is not None else (
                f"r{_number(self.rate)}" if self.rate is not None else "r")
            return f"capacity:{axis}:{shape}:{count}:{slo}@p{self.slo_percentile:g}"
        if self.trace is not None:
            name = f"trace-{self.trace.replace(chr(92), '/').rsplit('/', 1)[-1]}"[:48]
            return f"{name}:{count}" + (f":max{self.max_concurrency}" if self.max_concurrency else "")
        if self.concurrency is not None:
            return f"c{self.concurrency}:{shape}:{count}"
        assert self.rate is not None, "__post_init__: a load test has a concurrency, a rate or a trace"
        name = f"r{_number(self.rate)}:{shape}:{count}"
        if self.burstiness != 1.0:
            name += f":burst{_number(self.burstiness)}"
        if self.max_concurrency:
            name += f":max{self.max_concurrency}"
        return name

    def expected_tokens(self) -> None:
        """Requests decide, not the spec: a failed request keeps what it received."""
        return None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["percentiles"] = list(self.percentiles)
        data["rate"] = "inf" if self.rate == float("inf") else self.rate  # JSON has no infinity
        data["name"], data["batch"] = self.name, self.batch
        del data["ray_address"]  # a cluster's address is the user's, like a server's URL: not stored
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "ServeSpec":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k not in ("kind",)}
        if "percentiles" in known:
            known["percentiles"] = tuple(known["percentiles"])
        if known.get("rate") == "inf":
            known["rate"] = float("inf")
        return cls(**known)
