"""Where a server's time to first token goes (``pdx serve-bench --scenario overhead``).

Each request of the test is a one-token request of ``n_prompt`` tokens sent to
the server, then the same prompt ids prefilled by the same engine in pdx's own
process (the server backend's ``in_process`` sibling: llama-server beside
llama.cpp through llama-cpp-python, vLLM's server beside ``vllm.LLM``), with the
same model, threads and seed. The ids agree because both draw them from the
one prompt stream under the same test name. One at a time, never both at once,
so neither competes with the other for the cores.

Per pair: the server's TTFT, the engine's prefill, and their difference, the
server's own part (HTTP, scheduling, sampling the first token, flushing the
first chunk; with token-id prompts, no tokenisation). Where the server says
how long its own prefill took (llama-server's prompt seconds, vLLM's prefill
histogram), that is kept beside, as a third view.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Callable

from pdx.contract.backend import Sample
from pdx.domain.workload import TestSpec

if TYPE_CHECKING:
    from pdx.contract.backend import Backend
    from pdx.domain.prompt_stream import Prompts
    from pdx.domain.serving.spec import ServeSpec

ROLE = "overhead"


def overhead_sample(test: "ServeSpec", server: Callable[[TestSpec, "Prompts"], Sample],
                    next_prompts: Callable[[TestSpec], "Prompts"], engine: "Backend",
                    reported_prefill_s: Callable[[dict], float | None]) -> Sample:
    """The test's pairs (its warm-up pairs uncounted): ``server(pp, prompts)`` is the server's one-token
    sample of those prompts, its engine figures included; ``engine`` the loaded in-process sibling."""
    pp = TestSpec(test.n_prompt, 0)
    records, prefill, reported = [], [], []
    for i in range(test.warmup_requests + test.n_requests):
        served = server(pp, next_prompts(pp))
        inside = next(iter(engine.run(pp, 1, 0)))
        if i < test.warmup_requests:
            continue
        for record in served.requests:
            record.role = ROLE
        records += served.requests
        prefill.append(inside.ns)
        reported.append(reported_prefill_s(served.engine))
    ttft = [r.first_ns for r in records]
    return Sample(ns=max(sum(ttft), 1), n_prompt=test.n_prompt * len(records), n_gen=len(records), requests=records,
                  engine={"overhead": {"in_process": engine.name, "engine_prefill_ns": prefill,
                                       "server_reported_prefill_ns": [None if s is None else round(s * 1e9)
                                                                      for s in reported]}})


def _ms(values: list[float]) -> float | None:
    return statistics.median(values) / 1e6 if values else None


def overhead_stats(records: list, samples: list[dict]) -> dict | None:
    """Medians over the pairs of every sample: TTFT, the engine's prefill, the server's part (per pair:
    TTFT minus prefill) and its share of TTFT, and the server's own prefill figure where it gave one."""
    found = [(s.get("engine") or {}).get("overhead") for s in samples]
    found = [f for f in found if f]
    if not found:
        return None
    ttft = [r.first_ns for r in records if r.role == ROLE and r.ok]
    prefill = [ns for f in found for ns in f["engine_prefill_ns"]]
    reported = [ns for f in found for ns in f["server_reported_prefill_ns"] if ns is not None]
    if len(ttft) != len(prefill):  # a failed request: no pairs to set side by side
        return {"in_process": found[0]["in_process"], "pairs": 0}
    part = [t - p for t, p in zip(ttft, prefill)]
    median_ttft = _ms(ttft)
    return {"in_process": found[0]["in_process"], "pairs": len(part), "ttft_median_ms": median_ttft,
            "engine_prefill_median_ms": _ms(prefill), "server_part_median_ms": _ms(part),
            "server_part_share": _ms(part) / median_ttft if median_ttft else None,
            "server_reported_prefill_median_ms": _ms(reported)}
