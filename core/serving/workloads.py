"""The workload of one ``pdx serve-bench`` run: its options as :class:`~pdx.serving.spec.ServeSpec` tests.

Apart from :mod:`pdx.serving.spec` because a workload holds specs: ``pdx.workload`` reads them back
from stored runs, and this module builds the workload, so neither needs the other's module.
"""

from __future__ import annotations

from pdx.errors import WorkloadError
from pdx.serving.capacity import DEFAULT_BUDGET_S, DEFAULT_PERCENTILE, DEFAULT_PRECISION
from pdx.serving.metrics import DEFAULT_PERCENTILES
from pdx.serving.saturation import DEFAULT_WINDOW_S
from pdx.serving.spec import ServeSpec
from pdx.serving.traffic import read_trace
from pdx.workload import Workload


def serve_workload(scenario: str, n_prompt: int, n_gen: int, concurrency: list[int] | None = None,
                   rates: list[float] | None = None, burstiness: float = 1.0, max_concurrency: int | None = None,
                   n_requests: int | None = None, duration_s: float | None = None, inject: int = 1024,
                   prefix: int | None = None, warmup_requests: int = 1, slo: dict | None = None,
                   percentiles: tuple[float, ...] = DEFAULT_PERCENTILES, repetitions: int = 1, seed: int = 42,
                   catch_up: bool = False, saturation_window_s: float = DEFAULT_WINDOW_S,
                   slo_percentile: float = DEFAULT_PERCENTILE, precision: float = DEFAULT_PRECISION,
                   traffic: dict | None = None, budget_s: float = DEFAULT_BUDGET_S,
                   prompt_lens: list[int] | None = None, clients: int = 1, ray_address: str | None = None):
    """The tests of one ``pdx serve-bench`` run; ``prompt_lens``: the overhead scenario's prompt lengths
    [default: ``n_prompt``]; ``clients``: client processes a load test is split over, on this machine or,
    with ``ray_address``, as Ray actors."""
    common = dict(n_prompt=n_prompt, n_gen=n_gen, warmup_requests=warmup_requests, slo=dict(slo or {}),
                  percentiles=tuple(percentiles), catch_up=catch_up, saturation_window_s=saturation_window_s)
    if clients > 1 or ray_address:
        if scenario not in ("load", "sweep"):
            raise WorkloadError(f"--clients and --ray split load and sweep tests; a {scenario} test is one client's")
        common |= dict(clients=clients, client_pool="ray" if ray_address else "local", ray_address=ray_address)
    shaped = dict(traffic or {})
    if shaped.get("trace"):
        if scenario != "load" or rates or concurrency:
            raise WorkloadError("a trace sets its own arrivals: give --trace with the load scenario, "
                                "without -c or --request-rate")
        shaped["trace_sha256"] = read_trace(shaped["trace"])[1]
        return Workload((ServeSpec("load", max_concurrency=max_concurrency, **common, **shaped,
                                   n_requests=n_requests, duration_s=duration_s),), repetitions=repetitions,
                        warmup=0, seed=seed)
    shaped.pop("trace", None)
    if prompt_lens and len(prompt_lens) > 1 and scenario != "overhead":
        raise WorkloadError("a list of prompt lengths (-p N,N) is for --scenario overhead; give one -p here")
    if shaped and scenario not in ("load", "sweep", "capacity"):
        raise WorkloadError(f"{scenario}: traffic shapes (--system-prompt, --turns, --input-dist, --output-dist, "
                            "--ramp-up) apply to load, sweep and capacity tests")
    common |= shaped
    count = dict(n_requests=n_requests, duration_s=duration_s)
    if scenario in ("load", "sweep"):
        if rates and concurrency:
            raise WorkloadError("give a concurrency (closed loop) or a request rate (open loop), not both")
        if rates:
            tests = [ServeSpec("load", rate=r, burstiness=burstiness, max_concurrency=max_concurrency, **common,
                               **count) for r in rates]
        else:
            levels = concurrency or ([1, 4, 16] if scenario == "sweep" else [1])
            tests = [ServeSpec("load", concurrency=c, **common,
                               n_requests=n_requests if n_requests or duration_s else max(4 * c, 8),
                               duration_s=duration_s) for c in levels]
    elif scenario == "capacity":
        if len(concurrency or []) > 1 or len(rates or []) > 1:
            raise WorkloadError("capacity: give one start (-c N or --request-rate R), not a list")
        tests = [ServeSpec("capacity", concurrency=(concurrency or [None])[0], rate=(rates or [None])[0],
                           burstiness=burstiness, max_concurrency=max_concurrency, slo_percentile=slo_percentile,
                           precision=precision, budget_s=budget_s, **common,
                           n_requests=n_requests, duration_s=duration_s)]
    elif scenario == "stall":
        tests = [ServeSpec("stall", concurrency=c, inject=inject, **common) for c in (concurrency or [4])]
    elif scenario == "overhead":
        common |= {"n_gen": 1}
        tests = [ServeSpec("overhead", **(common | {"n_prompt": n}), n_requests=n_requests or 8, concurrency=1)
                 for n in (prompt_lens or [n_prompt])]
    elif scenario == "cache":
        count = dict(n_requests=n_requests or 8 if not duration_s else None, duration_s=duration_s)
        shared = prefix if prefix is not None else n_prompt * 3 // 4
        tests = [ServeSpec("cache-cold", **common, **count),
                 ServeSpec("cache-warm", prefix=shared, **common, **count)]
    else:
        raise WorkloadError(f"unknown scenario {scenario!r}; choose load, sweep, stall, cache, capacity or overhead")
    return Workload(tuple(tests), repetitions=repetitions, warmup=0, seed=seed)
