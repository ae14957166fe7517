"""One sample of a test over HTTP: the pp/tg matrix as server figures, and the
serving scenarios.

pp/tg follow llama-bench's names with server semantics: ``pp N`` is the TTFT
of a ``max_tokens=1`` request of N new tokens (batch B: B such requests at
once, until the last first token); ``tg N`` is first to last token of a
request generating N + 1 (N decode steps); ``@dD`` sends a D-token prefix
first, untimed, so the server's prefix cache holds it (the backend checks its
hit counter where it has one); ``pp+tg`` times both in one request.
"""

from __future__ import annotations

import random

from pdx.contract.backend import Sample
from pdx.domain.prompt_stream import Prompts
from pdx.domain.serving import capacity
from pdx.measure.serving.load import Planned, arrivals, for_duration, run_load, shaped_loop
from pdx.domain.serving.metrics import serving_stats
from pdx.measure.serving.openai import CompletionsClient
from pdx.measure.serving.plans import arrival_seed, scenario_plan
from pdx.domain.serving.prompts import PromptMaker
from pdx.domain.serving.records import RequestRecord, RequestsFailed, TokensInOneBurst, failure_summary
from pdx.measure.serving.shards import run_sharded
from pdx.domain.serving.spec import ServeSpec
from pdx.domain.workload import TestSpec


def check_records(records: list, name: str) -> None:
    """A sample with a failed request is no sample: raise, handing the records on to be stored."""
    summary = failure_summary(records)
    if summary:
        raise RequestsFailed(f"{name}: {summary}", records)


def matrix_requests(test: TestSpec, prompts: Prompts) -> list[Planned]:
    """The ``test.batch`` requests of one pp/tg sample, sent together once the depth is cached: each
    the depth, then its prompt (tg: the one fresh token its decode starts from)."""
    max_tokens = 1 if test.kind == "pp" else test.n_gen + 1
    return [Planned(prompts.sent(s), max_tokens, test.kind) for s in range(test.batch)]


def depth_request(prompts: Prompts) -> Planned | None:
    """The untimed request that puts the depth in the server's prefix cache (None at depth 0)."""
    return Planned(prompts.depth, 1, "depth") if prompts.depth else None


def matrix_sample(client: CompletionsClient, test: TestSpec, prompts: Prompts) -> Sample:
    if (fill := depth_request(prompts)) is not None:
        check_records(run_load(client, iter([fill])).records, test.name)
    result = run_load(client, iter(matrix_requests(test, prompts)), max_concurrency=test.batch)
    check_records(result.records, test.name)
    return sample_from_records(test, result.records)


def sample_from_records(test: TestSpec, records: list) -> Sample:
    """A pp, tg or pp+tg sample from the records of its ``test.batch`` requests."""
    sent = min(r.send_ns for r in records)
    first = [r.send_ns + r.first_ns for r in records]
    last = [r.send_ns + r.events[-1][0] for r in records]
    sample = Sample(ns=0, n_prompt=test.n_prompt * test.batch, n_gen=test.n_gen * test.batch, requests=records)
    if test.kind == "pp":
        sample.ns = max(first) - sent
    elif test.kind == "tg":
        sample.ns = max(last) - min(first)
    else:
        sample.ns, sample.prompt_ns = max(last) - sent, max(first) - sent
        sample.gen_ns = sample.ns - sample.prompt_ns
    if sample.ns <= 0 or sample.gen_ns == 0:
        raise TokensInOneBurst(f"{test.name}: every token arrived at once, so no decode time can be measured",
                               records)
    return sample


def capacity_sample(client: CompletionsClient, spec: ServeSpec, prompts: PromptMaker) -> Sample:
    """The capacity search (:mod:`pdx.domain.serving.capacity`): one load run per point, every request kept
    (``role`` names its point), the points and the verdict in the sample's ``engine``."""
    percentiles = tuple(sorted(set(spec.percentiles) | {spec.slo_percentile}))
    warm = run_load(client, iter([Planned(prompts.tokens(spec.n_prompt), spec.n_gen, "warmup")
                                  for _ in range(max(1, spec.warmup_requests))]), 1)
    closed = spec.concurrency is not None
    start: float
    if spec.concurrency is not None:
        start = spec.concurrency
    elif spec.rate is not None:
        start = spec.rate
    else:  # one request's service rate
        ends = [r.end_ns for r in warm.records if r.ok and r.end_ns]
        start = 1e9 / max(ends) if ends else 1.0
    records: list[RequestRecord] = []
    points: list[dict] = []
    first_origin: int | None = None

    def measure(x: float) -> bool:
        nonlocal first_origin
        role = f"point{len(points)}"
        n = spec.n_requests if spec.n_requests or spec.duration_s else capacity.point_requests(x, closed)
        requests = ((prompt, n_out, role, session) for prompt, n_out, _, session in
                    spec.shape.requests(prompts, random.Random(arrival_seed(prompts)), n))
        # A point of a duration has no known count: it runs its course.
        watch = None if spec.duration_s or n is None else capacity.SloWatch(spec.slo, spec.slo_percentile, n)
        if closed:
            plan = shaped_loop(requests, think_s=spec.think_s)
            result = run_load(client, for_duration(plan, spec.duration_s) if spec.duration_s else plan, int(x),
                              give_up=watch)
        else:
            plan = shaped_loop(requests, arrivals(x, spec.burstiness, arrival_seed(prompts), spec.ramp_s),
                               spec.duration_s, spec.think_s)
            result = run_load(client, plan, spec.max_concurrency, catch_up=spec.catch_up,
                              saturation_window_s=spec.saturation_window_s, give_up=watch)
        first_origin = result.origin_ns if first_origin is None else first_origin
        records.extend(result.records)
        stats = serving_stats(result.records, result.makespan_ns, percentiles=percentiles)
        verdict = capacity.judge(stats, spec.slo, spec.slo_percentile, result.saturation is not None,
                                 result.gave_up)
        points.append({"x": x, "role": role, **verdict, "requests": len(result.records),
                       "failed": stats["failed"], "saturation": result.saturation, "gave_up": result.gave_up,
                       "output_throughput": stats["output_throughput"],
                       "request_throughput": stats["request_throughput"],
                       "origin_offset_ns": result.origin_ns - first_origin, "makespan_ns": result.makespan_ns})
        return verdict["held"]

    search = capacity.Search(measure, start, spec.precision, integer=closed, max_points=spec.max_points,
                             budget_s=spec.budget_s or None)
    lo, hi = search.run()
    ok = [r for r in records if r.ok]
    span = max((p["origin_offset_ns"] + p["makespan_ns"] for p in points), default=1)
    found = capacity.summary(points, lo, hi, "concurrency" if closed else "rate", spec.slo, spec.slo_percentile,
                             spec.precision, search.out_of_time)
    return Sample(ns=max(span, 1), n_prompt=sum(r.n_prompt for r in ok), n_gen=sum(r.n_gen for r in ok),
                  requests=records, engine={"capacity": found, "start": start}, origin_ns=first_origin)


def sharded_sample(client: CompletionsClient, spec: ServeSpec, prompts: PromptMaker) -> tuple[Sample, str | None]:
    """A load test from ``spec.clients`` client processes (:mod:`pdx.measure.serving.shards`), merged into
    one sample."""
    records, clients, start_ns = run_sharded(client, spec, prompts)
    ok = [r for r in records if r.ok]
    ends = [r.send_ns + r.end_ns for r in records if r.end_ns is not None]
    makespan = max(ends) - min(r.send_ns for r in records) if ends else 0
    # The shards' send times count from the start named on this process's clock: the server series' origin too.
    sample = Sample(ns=max(makespan, 1), n_prompt=sum(r.n_prompt for r in ok), n_gen=sum(r.n_gen for r in ok),
                    requests=records, engine={"clients": clients}, origin_ns=start_ns)
    stopped = next((c["saturation"] for c in clients if c.get("saturation")), None)
    if stopped:
        sample.engine["saturation"] = stopped
    summary = failure_summary(records)
    return sample, f"{spec.name}: {summary}" if summary else None


def scenario_sample(client: CompletionsClient, spec: ServeSpec, prompts: PromptMaker) -> tuple[Sample, str | None]:
    """One run of a serving scenario, and a summary of its failed requests (if any)."""
    if spec.scenario == "capacity":  # failed requests are a finding here (a point that broke), not a failure
        return capacity_sample(client, spec, prompts), None
    if spec.clients > 1:
        return sharded_sample(client, spec, prompts)
    plan, warmup, cap = scenario_plan(spec, prompts)
    timed = spec.scenario == "load" and (spec.trace is not None or spec.rate not in (None, float("inf")))
    result = run_load(client, plan, cap, warmup, catch_up=spec.catch_up,
                      saturation_window_s=spec.saturation_window_s if timed else None)
    ok = [r for r in result.records if r.ok]
    sample = Sample(ns=max(result.makespan_ns, 1), n_prompt=sum(r.n_prompt for r in ok),
                    n_gen=sum(r.n_gen for r in ok), requests=result.records,
                    engine={"client": result.client()}, origin_ns=result.origin_ns)
    if result.saturation:
        sample.engine["saturation"] = result.saturation
    summary = failure_summary(result.records)
    return sample, f"{spec.name}: {summary}" if summary else None
