"""What a serving scenario sends: its plan (requests in sending order, each due when a slot frees or
at its offset), its warm-up and its cap on requests in flight, drawn from the scenario's prompts.

Apart from :mod:`pdx.measure.serving.runs`, which sends it, because a client process of a sharded load test
(:mod:`pdx.measure.serving.shards`) builds the same plan from the same prompts and keeps its share.
"""

from __future__ import annotations

import random
from typing import Iterable

from pdx.contract.errors import PdxError
from pdx.measure.serving.load import Planned, arrivals, closed_loop, for_duration, open_loop, shaped_loop
from pdx.domain.serving.prompts import PromptMaker
from pdx.domain.serving.spec import ServeSpec
from pdx.domain.serving.traffic import Shape, read_trace, trace_requests


def arrival_seed(prompts: PromptMaker) -> int:
    """A seed drawn from the prompt stream, for what else a scenario draws (arrivals, lengths)."""
    return prompts.seed()


def scenario_plan(spec: ServeSpec, prompts: PromptMaker) -> tuple[Iterable[Planned], list[Planned], int | None]:
    """(plan, warm-up, cap) of one scenario."""
    fresh = lambda role: Planned(prompts.tokens(spec.n_prompt), spec.n_gen, role)  # noqa: E731
    warmup = [fresh("warmup") for _ in range(spec.warmup_requests)]
    if spec.scenario == "stall":
        steady = [fresh("steady") for _ in range(spec.concurrency)]
        # Injected once every stream is decoding: a quarter of their tokens in.
        intruder = Planned(prompts.tokens(spec.inject), 1, "intruder", after_tokens=max(2, spec.n_gen // 4))
        return steady + [intruder], warmup, None
    prefix: list[int] = []
    if spec.scenario == "cache-warm":
        prefix = prompts.tokens(spec.prefix)
        warmup = [Planned(prompts.tokens(spec.n_prompt, prefix), spec.n_gen, "warmup")]
    source = (prompts.stream(spec.n_prompt, prefix) if spec.n_requests is None
              else prompts.many(spec.n_requests, spec.n_prompt, prefix))
    if spec.scenario.startswith("cache"):
        role = spec.scenario.split("-")[1]
        plan = closed_loop(source, spec.n_gen, role)
        return (for_duration(plan, spec.duration_s) if spec.duration_s else plan), warmup, 1
    if spec.trace is not None:
        lines = read_trace(spec.trace)[0]
        if spec.trace_sha256 and read_trace(spec.trace)[1] != spec.trace_sha256:
            raise PdxError(f"--trace {spec.trace}: the file changed since the run was planned")
        lines = lines[:spec.n_requests] if spec.n_requests else lines
        plan = (Planned(prompt, n_out, role, at, session=conversation)
                for prompt, n_out, at, role, conversation in trace_requests(lines, prompts)
                if spec.duration_s is None or at < spec.duration_s)
        return plan, warmup, spec.max_concurrency
    if spec.shape != Shape(spec.n_prompt, spec.n_gen):
        rng = random.Random(arrival_seed(prompts))
        requests = spec.shape.requests(prompts, rng, spec.n_requests)
        if spec.rate is not None:
            times = arrivals(spec.rate, spec.burstiness, arrival_seed(prompts), spec.ramp_s)
            return shaped_loop(requests, times, spec.duration_s, spec.think_s), warmup, spec.max_concurrency
        plan = shaped_loop(requests, think_s=spec.think_s)
        return (for_duration(plan, spec.duration_s) if spec.duration_s else plan), warmup, spec.concurrency
    if spec.rate is not None:
        return open_loop(source, spec.n_gen, spec.rate, spec.burstiness, prompts.seed(),
                         duration_s=spec.duration_s, ramp_s=spec.ramp_s), warmup, spec.max_concurrency
    plan = closed_loop(source, spec.n_gen)
    return (for_duration(plan, spec.duration_s) if spec.duration_s else plan), warmup, spec.concurrency
