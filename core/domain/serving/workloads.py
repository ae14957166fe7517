"""The workload of one ``pdx serve-bench`` run: its options as :class:`~pdx.domain.serving.spec.ServeSpec` tests,
and a stored workload of either kind read back (``pdx.domain.workload`` knows pp/tg tests only, so it never
reaches up into serving)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from pdx.contract.errors import WorkloadError
from pdx.domain.serving.capacity import DEFAULT_BUDGET_S, DEFAULT_PERCENTILE, DEFAULT_PRECISION
from pdx.domain.serving.metrics import DEFAULT_PERCENTILES
from pdx.domain.serving.saturation import DEFAULT_WINDOW_S
from pdx.domain.serving.spec import ServeSpec
from pdx.domain.serving.traffic import read_trace
from pdx.domain.workload import Workload


def stored_workload(data: dict) -> Workload:
    """A stored run's workload, pp/tg tests or serving scenarios."""
    return Workload.from_dict(data, ServeSpec.from_dict)


class Traffic(TypedDict, total=False):
    """The traffic-shape fields given (pdx.domain.serving.traffic), named as :class:`ServeSpec` takes them."""

    system_prompt: int
    turns: int
    input_dist: str
    output_dist: str
    ramp_s: float
    trace: str
    think_s: float
    trace_sha256: str


class _Shared(Traffic, total=False):
    """The :class:`ServeSpec` fields every test of one run shares: these and the traffic shape's (added
    once checked)."""

    n_prompt: int
    n_gen: int
    warmup_requests: int
    slo: dict[str, float]
    percentiles: tuple[float, ...]
    catch_up: bool
    saturation_window_s: float
    clients: int
    client_pool: str
    ray_address: str | None


class _Count(TypedDict):
    n_requests: int | None
    duration_s: float | None


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """What ``pdx serve-bench`` was asked, by name: the one object its workload is built from (no run of
    adjacent numbers to swap). ``prompt_lens``: the overhead scenario's prompt lengths [default:
    ``n_prompt``]; ``clients``: client processes a load test is split over, on this machine or, with
    ``ray_address``, as Ray actors; ``traffic``: the traffic-shape fields given (pdx.domain.serving.traffic)."""

    scenario: str = "load"
    n_prompt: int
    n_gen: int
    concurrency: list[int] | None = None
    rates: list[float] | None = None
    burstiness: float = 1.0
    max_concurrency: int | None = None
    n_requests: int | None = None
    duration_s: float | None = None
    inject: int = 1024
    prefix: int | None = None
    warmup_requests: int = 1
    slo: dict[str, float] | None = None
    slo_percentile: float = DEFAULT_PERCENTILE
    precision: float = DEFAULT_PRECISION
    budget_s: float = DEFAULT_BUDGET_S
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    repetitions: int = 1
    seed: int = 42
    catch_up: bool = False
    saturation_window_s: float = DEFAULT_WINDOW_S
    traffic: Traffic | None = None
    prompt_lens: list[int] | None = None
    clients: int = 1
    ray_address: str | None = None


def serve_workload(options: ServeOptions) -> Workload:
    """The tests of one ``pdx serve-bench`` run."""
    o = options
    common: _Shared = dict(n_prompt=o.n_prompt, n_gen=o.n_gen, warmup_requests=o.warmup_requests, slo=dict(o.slo or {}),
                  percentiles=tuple(o.percentiles), catch_up=o.catch_up, saturation_window_s=o.saturation_window_s)
    if o.clients > 1 or o.ray_address:
        if o.scenario not in ("load", "sweep"):
            raise WorkloadError(f"--clients and --ray split load and sweep tests; a {o.scenario} test is one client's")
        common.update({"clients": o.clients, "client_pool": "ray" if o.ray_address else "local",
                       "ray_address": o.ray_address})
    shaped: Traffic = {**(o.traffic or {})}
    if shaped.get("trace"):
        if o.scenario != "load" or o.rates or o.concurrency:
            raise WorkloadError("a trace sets its own arrivals: give --trace with the load scenario, "
                                "without -c or --request-rate")
        shaped["trace_sha256"] = read_trace(shaped["trace"])[1]
        common.update(shaped)
        return Workload((ServeSpec("load", max_concurrency=o.max_concurrency, **common,
                                   n_requests=o.n_requests, duration_s=o.duration_s),), repetitions=o.repetitions,
                        warmup=0, seed=o.seed)
    shaped.pop("trace", None)
    if o.prompt_lens and len(o.prompt_lens) > 1 and o.scenario != "overhead":
        raise WorkloadError("a list of prompt lengths (-p N,N) is for --scenario overhead; give one -p here")
    if shaped and o.scenario not in ("load", "sweep", "capacity"):
        raise WorkloadError(f"{o.scenario}: traffic shapes (--system-prompt, --turns, --think-time, --input-dist, "
                            "--output-dist, --ramp-up) apply to load, sweep and capacity tests")
    common.update(shaped)
    count: _Count = dict(n_requests=o.n_requests, duration_s=o.duration_s)
    if o.scenario in ("load", "sweep"):
        if o.rates and o.concurrency:
            raise WorkloadError("give a concurrency (closed loop) or a request rate (open loop), not both")
        if o.rates:
            tests = [ServeSpec("load", rate=r, burstiness=o.burstiness, max_concurrency=o.max_concurrency, **common,
                               **count) for r in o.rates]
        else:
            levels = o.concurrency or ([1, 4, 16] if o.scenario == "sweep" else [1])
            tests = [ServeSpec("load", concurrency=c, **common,
                               n_requests=o.n_requests if o.n_requests or o.duration_s else max(4 * c, 8),
                               duration_s=o.duration_s) for c in levels]
    elif o.scenario == "capacity":
        if len(o.concurrency or []) > 1 or len(o.rates or []) > 1:
            raise WorkloadError("capacity: give one start (-c N or --request-rate R), not a list")
        tests = [ServeSpec("capacity", concurrency=o.concurrency[0] if o.concurrency else None,
                           rate=o.rates[0] if o.rates else None,
                           burstiness=o.burstiness, max_concurrency=o.max_concurrency, slo_percentile=o.slo_percentile,
                           precision=o.precision, budget_s=o.budget_s, **common,
                           n_requests=o.n_requests, duration_s=o.duration_s)]
    elif o.scenario == "stall":
        tests = [ServeSpec("stall", concurrency=c, inject=o.inject, **common) for c in (o.concurrency or [4])]
    elif o.scenario == "overhead":
        common["n_gen"] = 1
        tests = [ServeSpec("overhead", **(common | {"n_prompt": n}), n_requests=o.n_requests or 8, concurrency=1)
                 for n in (o.prompt_lens or [o.n_prompt])]
    elif o.scenario == "cache":
        count = {"n_requests": o.n_requests or 8 if not o.duration_s else None, "duration_s": o.duration_s}
        shared = o.prefix if o.prefix is not None else o.n_prompt * 3 // 4
        tests = [ServeSpec("cache-cold", **common, **count),
                 ServeSpec("cache-warm", prefix=shared, **common, **count)]
    else:
        raise WorkloadError(f"unknown scenario {o.scenario!r}; choose load, sweep, stall, cache, capacity or overhead")
    return Workload(tuple(tests), repetitions=o.repetitions, warmup=0, seed=o.seed)
