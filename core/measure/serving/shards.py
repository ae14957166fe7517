"""One load test from several client processes (``pdx serve-bench --clients N``), on this machine
or as Ray actors spread over a cluster (``--ray ADDRESS|auto``).

Every shard rebuilds the test's plan from the same seed and keeps its share: arrivals dealt in
turn (an open loop's arrival times are absolute, so the schedule is the driver's whatever shard
sends it), a conversation's turns all on one shard (the first turn decides), a closed loop's
concurrency and an open loop's cap split between them. The driver runs the warm-up, then measures
each shard's clock against its own (round trips before and after the run; the tightest one counts:
offset = shard time - midpoint, uncertain by half its round trip), names a start a moment ahead,
converted to each shard's clock, and merges what the shards send back: the same origin, so their
send times are on the driver's clock within that uncertainty, re-numbered in sending order, each
request keeping its shard and the run where each shard ran.

A shard that dies (its process killed, a Ray node lost) costs its own requests only: the others'
are kept, and the test fails naming the shard, so nothing is counted twice or invented.
"""

from __future__ import annotations

import importlib.util

import os
import pickle
import socket
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

from pdx.contract.errors import PdxError
from pdx.measure.serving.load import Planned, run_load
from pdx.measure.serving.plans import scenario_plan
from pdx.domain.serving.records import RequestRecord, RequestsFailed
from pdx.base.workers import Worker

PINGS = 15  # round trips per clock reading; the tightest one counts
LOCAL_LEAD_S = 0.5  # how far ahead the driver names the start: the task must reach every shard first
RAY_LEAD_S = 2.0
SCENARIOS = ("load",)  # a stall's intruder, a cache test's order and a capacity search are one client's


# --- the shares ------------------------------------------------------------------------------------------

def share(plan: Iterable[Planned], n: int, k: int) -> Iterator[Planned]:
    """Shard ``k`` of ``n``'s requests of ``plan``: single requests dealt in turn, a session's all to the
    shard its first request went to."""
    sessions: dict[str, int] = {}
    dealt = 0
    for planned in plan:
        if planned.session is not None:
            owner = sessions.setdefault(planned.session, len(sessions) % n)
        else:
            owner, dealt = dealt % n, dealt + 1
        if owner == k:
            yield planned


def caps(total: int | None, n: int) -> list[int | None]:
    """A cap on requests in flight split between ``n`` shards (None: no cap)."""
    if total is None:
        return [None] * n
    return [total // n + (1 if k < total % n else 0) for k in range(n)]


# --- what runs in a shard (a pdx worker process, or a Ray actor) -----------------------------------------

def clock(_=None) -> int:
    return time.perf_counter_ns()


def where() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def run_shard(task: dict) -> dict:
    """Shard ``task["k"]`` of ``task["n"]``: its share of the plan, from the driver's start (this clock)."""
    spec, prompts = task["spec"], pickle.loads(task["prompts"])
    plan, _, _ = scenario_plan(spec, prompts)  # the same draws as the driver's: its warm-up first, then the plan
    timed = spec.trace is not None or spec.rate not in (None, float("inf"))
    result = run_load(task["client"], share(plan, task["n"], task["k"]), task["cap"], catch_up=spec.catch_up,
                      saturation_window_s=spec.saturation_window_s if timed else None, start_ns=task["start_ns"])
    return {"records": [r.to_dict() for r in result.records], "client": result.client(),
            "saturation": result.saturation, **where()}


# --- where shards run ------------------------------------------------------------------------------------

class LocalShard:
    """A shard in a pdx worker process on this machine (:class:`pdx.base.workers.Worker`)."""

    lead_s = LOCAL_LEAD_S

    def __init__(self) -> None:
        self.worker = Worker()
        self.place = {"pool": "local", "node": None, "host": socket.gethostname(), "pid": self.worker.process.pid}

    def clock(self) -> int:
        self.worker.submit("pdx.measure.serving.shards:clock", None)
        return self.worker.result()

    def start(self, task: dict) -> None:
        self.worker.submit("pdx.measure.serving.shards:run_shard", task)

    def result(self) -> dict:
        return self.worker.result()

    def close(self) -> None:
        self.worker.close()


class RayShard:
    """A shard as a Ray actor, spread over the cluster's nodes."""

    lead_s = RAY_LEAD_S

    def __init__(self, actor_class) -> None:
        import ray

        self.ray = ray
        self.actor = actor_class.options(scheduling_strategy="SPREAD").remote()
        self.pending = None
        self.place = {"pool": "ray", **ray.get(self.actor.where.remote())}

    def clock(self) -> int:
        return self.ray.get(self.actor.clock.remote())

    def start(self, task: dict) -> None:
        self.pending = self.actor.run.remote(task)

    def result(self) -> dict:
        return self.ray.get(self.pending)

    def close(self) -> None:
        self.ray.kill(self.actor)


def require_ray() -> None:
    """Refuse --ray where Ray is not installed: before any run, so no failed run is stored for it."""
    if importlib.util.find_spec("ray") is None:
        raise PdxError("--ray needs Ray", "pip install 'pdx[ray]'")


def _ray_actor_class(address: str):
    require_ray()
    import ray
    if not ray.is_initialized():
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise PdxError(f"--ray {address}: cannot join the Ray cluster ({str(exc).splitlines()[0]})",
                           "start one (`ray start --head`) or give its address") from None

    @ray.remote(num_cpus=1)
    class ShardActor:
        def clock(self) -> int:
            return clock()

        def where(self) -> dict:
            return {"node": ray.get_runtime_context().get_node_id(), **where()}

        def run(self, task: dict) -> dict:
            return run_shard(task)

    return ShardActor


def open_shards(n: int, ray_address: str | None) -> list:
    if ray_address is None:
        return [LocalShard() for _ in range(n)]
    actor_class = _ray_actor_class(ray_address)
    return [RayShard(actor_class) for _ in range(n)]


# --- clocks and the merge -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Offset:
    offset_ns: int  # shard clock - driver clock
    uncertainty_ns: int  # half the tightest round trip


def measure_offset(shard, pings: int = PINGS) -> Offset:
    best: tuple[int, int] | None = None
    for _ in range(pings):
        t0 = time.perf_counter_ns()
        theirs = shard.clock()
        t1 = time.perf_counter_ns()
        if best is None or t1 - t0 < best[1]:
            best = (theirs - (t0 + t1) // 2, t1 - t0)
    if best is None:
        raise ValueError(f"measure_offset: {pings} pings measure nothing; give 1 or more")
    return Offset(best[0], best[1] // 2)


def merge(results: dict[int, dict]) -> list[RequestRecord]:
    """Every shard's records on one origin (they share the driver's start), renumbered in sending order."""
    records = []
    for k, result in results.items():
        for data in result["records"]:
            record = RequestRecord.from_dict(data)
            record.shard = k
            records.append(record)
    records.sort(key=lambda r: (r.send_ns, r.shard))
    for idx, record in enumerate(records):
        record.idx = idx
    return records


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def run_sharded(client, spec, prompts) -> tuple[list[RequestRecord], list[dict], int]:
    """Run ``spec``'s plan from ``spec.clients`` shards; (merged records, each shard's record, the start
    on this process's perf_counter clock, which the records' send times count from). A shard that
    died raises :class:`RequestsFailed` holding the others' records."""
    n = spec.clients
    frozen = pickle.dumps(prompts)  # before the driver draws: every shard rebuilds the same plan
    _, warmup, cap = scenario_plan(spec, prompts)
    caps_of = caps(cap, n)
    if warmup:
        run_load(client, iter(()), warmup=warmup)
    shards = open_shards(n, spec.ray_address)
    try:
        before = [measure_offset(s) for s in shards]
        start = time.perf_counter_ns() + int(shards[0].lead_s * 1e9)
        for k, shard in enumerate(shards):
            shard.start({"client": client, "spec": spec, "prompts": frozen, "n": n, "k": k, "cap": caps_of[k],
                         "start_ns": start + before[k].offset_ns})
        results, died = {}, {}
        for k, shard in enumerate(shards):
            try:
                results[k] = shard.result()
            except Exception as exc:  # a worker that died, a lost Ray actor: that shard's requests are gone
                died[k] = _one_line(exc)
        after = {k: measure_offset(shards[k]) for k in results}
    finally:
        for shard in shards:
            try:
                shard.close()
            except Exception:  # a dead shard has nothing left to close
                pass
    clients = [_client_record(k, shards[k], before[k], after.get(k), results.get(k), died.get(k)) for k in range(n)]
    records = merge(results)
    if died:
        # No host name here: a failed test keeps its error but no sample, so no record says where to redact it.
        names = "; ".join(f"shard {k} ({clients[k]['pool']}, pid {clients[k]['pid']}): "
                          f"{why}" for k, why in died.items())
        raise RequestsFailed(f"{spec.name}: {len(died)} of {n} client shards died ({names}); the {len(records)} "
                             "requests of the others are kept, theirs are not counted", records)
    return records, clients, start


def _client_record(k: int, shard, before: Offset, after: Offset | None, result: dict | None,
                   died: str | None) -> dict:
    return {"shard": k, **shard.place, "offset_ns": [before.offset_ns, after.offset_ns if after else None],
            "offset_uncertainty_ns": max(before.uncertainty_ns, after.uncertainty_ns if after else 0),
            "requests": len(result["records"]) if result else None,
            **((result or {}).get("client") or {"cpu_s": None, "cores": None, "late_p99_ms": None}),
            "saturation": (result or {}).get("saturation"), "died": died}
