"""The backend contract, check by check (see :mod:`pdx.contract.backend` for the rules).

Each check takes a :class:`~pdx.testing.target.Harness` and raises
``AssertionError`` with what was wrong and what the rule is. The checks are
built to fail on the mistakes backends make: a warm-up yielded as a sample
or skipped, a depth that never reaches the engine (both counted exactly by a
work counter), times in the wrong unit (samples cannot add up to more than
the run took), errors that are tracebacks or paragraphs, a Ctrl-C swallowed
or leaving a process behind.

No check fails on how fast anything ran: the suite must hold on a busy
machine and on a slow server. What only the clock can suggest (a warm-up
skipped by a backend without a work counter, a depth filled inside the clock)
is a :class:`ContractWarning` naming the figures. A server that streams a
test's tokens in one burst (no decode time can be measured) is asked again;
if it keeps doing so, the refusal must still be a one-line error whose
request records hold exactly the tokens asked for, and the sample checks of
that test become a warning.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import replace
from typing import Mapping

from pdx.base import plugin_manager
from pdx.contract.backend import Availability, EngineInfo, Option, Sample, option_help
from pdx.contract.errors import PdxError
from pdx.measure.runner import check_sample
from pdx.domain.serving.spec import ServeSpec
from pdx.testing import processes
from pdx.testing.interrupt import interrupt_during
from pdx.testing.target import BURST_TRIES, Harness, RunResult, truncated
from pdx.domain.workload import TestSpec

# Clues, never failures (a busy machine can defeat either): a test at depth D taking more than this
# fraction of prefilling D + n tokens suggests a fill inside the clock (an untimed fill makes it 0.4-0.6
# for llama.cpp's tiny model on 2 cores); without a work counter, a first sample arriving sooner than this
# fraction of the quickest sample per warm-up run suggests warm-up skipped.
DEPTH_RATIO = 0.8
WARMUP_FLOOR = 0.5
# Repetitions of the run a Ctrl-C lands in: so many that no machine finishes them in the half
# repetition the interrupt waits.
CANCEL_REPETITIONS = 100


class ContractWarning(UserWarning):
    """Something pdx.testing found that breaks nothing yet (a deprecated hook a plugin still uses)."""


def one_line_error(exc: BaseException, doing: str) -> None:
    assert isinstance(exc, PdxError), (f"{doing} raised {type(exc).__name__}: {exc}; what a user can fix, and an "
                                       "engine failure, must be a pdx.contract.errors.PdxError")
    text = str(exc)
    assert text.strip(), f"{doing} raised a PdxError without a message"
    assert "\n" not in text, f"{doing} raised a PdxError of {len(text.splitlines())} lines; pdx prints one: {text!r}"


def json_ready(value: object, what: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"{what} cannot be stored (plain JSON, no NaN): {exc}") from None


def matrix(h: Harness) -> list[TestSpec]:
    p = h.params
    tests = [TestSpec(p.n_prompt, 0), TestSpec(0, p.n_gen), TestSpec(p.n_prompt, p.n_gen)]
    return tests + ([replace(t, batch=p.batch) for t in tests] if p.batch > 1 else [])


def refused(h: Harness, test) -> bool:
    """Whether the backend declines ``test``; its reason must be one line."""
    reason = h.backend.unsupported(test)
    if reason is not None:
        assert isinstance(reason, str) and reason.strip() and "\n" not in reason, \
            f"unsupported({test.name}) must return None or a one-line reason, not {reason!r}"
    return reason is not None


def check_request(test, record) -> None:
    where = f"{test.name}, request {record.idx}"
    assert record.ok, f"{where} failed: {record.error}"
    assert record.first_ns is not None and record.first_ns > 0, f"{where}: no first-token time"
    times = [t for t, _ in record.events]
    assert times == sorted(times) and times[0] == record.first_ns, f"{where}: token arrivals out of order"
    assert all(n > 0 for _, n in record.events), f"{where}: an event with no tokens was recorded"
    assert record.end_ns is not None and record.end_ns >= times[-1], f"{where}: the stream ended before its last token"


def check_refusal(test, result: RunResult) -> None:
    """A test the server kept streaming in one burst: the refusal is one line and every request it
    hands on is whole, exactly the tokens asked for. A warning says the sample checks were not made."""
    assert result.burst is not None, f"{test.name}: no refusal to check"
    one_line_error(result.burst, f"{test.name} (tokens streamed in one burst)")
    records = result.burst.requests
    assert len(records) == test.batch, f"{test.name}: the refusal holds {len(records)} requests, not {test.batch}"
    for record in records:
        check_request(test, record)
        assert record.n_gen == record.max_tokens, (f"{test.name}, request {record.idx}: {record.n_gen} tokens "
                                                   f"received of {record.max_tokens} asked for")
    warnings.warn(f"{test.name}: the server sent every token at once in {BURST_TRIES} tries ({result.burst}); "
                  "its token counts were checked, its sample times were not", ContractWarning, stacklevel=3)


def check_samples(test, result: RunResult, repetitions: int) -> None:
    if result.burst is not None:
        check_refusal(test, result)
        return
    samples = result.samples
    assert len(samples) == repetitions, \
        f"{test.name}: run() yielded {len(samples)} samples for {repetitions} repetitions"
    for i, sample in enumerate(samples):
        assert isinstance(sample, Sample), f"{test.name}: run() yielded {sample!r}, not a pdx.contract.backend.Sample"
        assert isinstance(sample.ns, int), f"{test.name}: Sample.ns must be an int of nanoseconds, not {sample.ns!r}"
        assert sample.ended_ns is None or (isinstance(sample.ended_ns,
                                                      int) and sample.ended_ns <= time.monotonic_ns()), \
            f"{test.name}: Sample.ended_ns is a time.monotonic_ns() reading already past, or None: {sample.ended_ns!r}"
        try:
            check_sample(test, sample)  # the runner's own rule: positive time, exactly the tokens the test names
        except PdxError as exc:
            raise AssertionError(str(exc)) from None
        prompt_ns, gen_ns = sample.prompt_ns, sample.gen_ns
        if (prompt_ns, gen_ns) != (None, None):
            assert (test.kind == "pg" and isinstance(prompt_ns, int) and prompt_ns > 0 and isinstance(gen_ns, int)
                    and gen_ns > 0), (f"{test.name}: prompt_ns and gen_ns are set only for pp+tg tests, both "
                                      f"positive: {(prompt_ns, gen_ns)}")
            both = prompt_ns + gen_ns
            assert both <= sample.ns + 1000, \
                f"{test.name}: prefill + decode ({both} ns) exceed the sample ({sample.ns} ns)"
        for record in sample.requests:
            check_request(test, record)
        json_ready(sample.to_dict(), f"{test.name}: sample {i}")
    total = sum(s.ns for s in samples)
    assert total <= result.wall_ns, (f"{test.name}: the samples add up to {total / 1e6:.3f} ms but run() took "
                                     f"{result.wall_ns / 1e6:.3f} ms; Sample.ns is nanoseconds")
    assert isinstance(result.test_info, dict), f"test_info() must return a dict, not {result.test_info!r}"
    json_ready(result.test_info, f"test_info() after {test.name}")


def check_manifest(h: Harness) -> None:
    cls = h.cls
    for attr in ("name", "engine", "summary"):
        value = getattr(cls, attr, None)
        assert isinstance(value, str) and value.strip(), f"{cls.__name__}.{attr} must be a non-empty string"
    assert cls.model_formats and all(isinstance(f, str) and f for f in cls.model_formats), \
        f"{cls.name}.model_formats names the model formats it loads, e.g. ('gguf',)"
    assert isinstance(cls.options, Mapping) and all(
        isinstance(k, str) and isinstance(v, (str, Option)) and option_help(v).strip() for k,
                                                    v in cls.options.items()), \
        f"{cls.name}.options maps each -o key to its help text or a pdx.contract.backend.Option"
    if isinstance(h.target.backend, str):
        record = next((r for r in plugin_manager.plugin_state().records if cls.name in r.backends), None)
        assert record is not None and record.distribution and record.version, \
            f"backend {cls.name} comes from no installed distribution's pdx entry point"
        for warning in record.warnings:
            warnings.warn(f"plugin {record.name}: {warning}", ContractWarning, stacklevel=2)
    status = cls.availability(h.target.options)
    assert isinstance(status, Availability), f"{cls.name}.availability() returned {status!r}, not an Availability"
    assert status.available, f"{cls.name} is not available here: {status.reason} (install: {status.install})"
    assert status.version, f"{cls.name}.availability() names no version; `pdx backends` shows it"
    h.backend  # loads it
    info = h.info
    assert isinstance(info, EngineInfo), f"{cls.name}.load() returned {info!r}, not an EngineInfo"
    assert isinstance(info.engine, str) and info.engine.strip(), "EngineInfo.engine names the engine"
    assert info.version or info.commit, "EngineInfo names the engine's version or commit: a stored run says what ran"
    assert isinstance(info.settings, dict) and info.settings, \
        "EngineInfo.settings holds the settings the engine resolved (threads, batch sizes, mode...)"
    assert isinstance(info.details, dict), "EngineInfo.details is a dict"
    json_ready(info.to_dict(), "EngineInfo")


def check_exact_tokens(h: Harness) -> None:
    p = h.params
    for test in matrix(h):
        if not refused(h, test):
            check_samples(test, h.run(test, p.repetitions, p.warmup), p.repetitions)


def check_warmup(h: Harness, warmup: int = 2, repetitions: int = 2) -> None:
    test = TestSpec(0, h.params.n_gen)
    one = h.run(test, 1, 0)
    check_samples(test, one, 1)
    result = h.run(test, repetitions, warmup)
    check_samples(test, result, repetitions)
    if one.burst is not None or result.burst is not None or one.retried or result.retried:
        return  # tries sent again did work of their own: the counts below cannot hold
    if one.work is not None:
        unit = one.work
        assert unit > 0, "the work counter did not move during a repetition; it counts nothing this backend does"
        for k, (_, done) in enumerate(result.at_yield, 1):
            need = (warmup + k) * unit
            assert done is not None and done >= need, (
                f"sample {k} arrived after {done} units of work, but {warmup} warm-up runs and {k} "
                f"repetitions take {need}: a warm-up run was yielded as a sample")
        total = (warmup + repetitions) * unit
        assert result.work == total, (f"{warmup} warm-up runs and {repetitions} repetitions took {result.work} units "
                                      f"of work, not {total} ({unit} each): warm-up runs skipped, or extra work")
        return
    first_at, first = result.at_yield[0][0], result.samples[0].ns
    floor = first + warmup * WARMUP_FLOOR * min(s.ns for s in result.samples)
    if first_at < floor:
        warnings.warn(f"the first sample arrived {first_at / 1e6:.2f} ms after run() began, yet it and {warmup} "
                      f"warm-up runs seem to take {floor / 1e6:.2f} ms: warm-up skipped or counted? (the clock "
                      "cannot tell on a busy machine; a work counter checks it exactly)", ContractWarning, stacklevel=2)


def check_depth(h: Harness) -> None:
    p = h.params
    shallow, deep, whole = TestSpec(p.n_prompt, 0), TestSpec(p.n_prompt, 0, p.depth), TestSpec(p.depth + p.n_prompt, 0)
    if refused(h, deep):
        return
    runs = {t: h.run(t, p.repetitions, 1) for t in (shallow, deep, whole)}
    for test, result in runs.items():
        check_samples(test, result, p.repetitions)
    timed = all(runs[t].samples for t in (deep, whole))
    fast, slow = (min(s.ns for s in runs[t].samples) if timed else 0 for t in (deep, whole))
    if timed and fast >= DEPTH_RATIO * slow:
        warnings.warn(f"{deep.name} took {fast / 1e6:.2f} ms and {whole.name} {slow / 1e6:.2f} ms: is the depth "
                      "filled inside the clock? It must sit in the KV cache before the clock starts (the clock "
                      "cannot tell on a busy machine; the engine's own counts can)", ContractWarning, stacklevel=2)
    deep_work, shallow_work = runs[deep].work, runs[shallow].work
    if deep_work is not None and shallow_work is not None:  # both counted, or neither
        extra = (deep_work - shallow_work) / (p.repetitions + 1)
        assert extra >= p.depth, (f"{deep.name} did {extra:.0f} units of work more than {shallow.name} per "
                                  f"repetition; filling the depth takes {p.depth} tokens")
    for sample in runs[deep].samples:
        hits = sample.engine.get("prefix_cache_hits")
        cached = [r.cached_tokens for r in sample.requests if r.cached_tokens is not None]
        assert hits is None or hits >= 0.9 * p.depth, \
            f"{deep.name}: the server's prefix cache hit {hits} tokens, not the depth of {p.depth}"
        assert all(c >= 0.9 * p.depth for c in cached), \
            f"{deep.name}: the server reports {cached} cached prompt tokens, not the depth of {p.depth}"


def check_errors(h: Harness) -> None:
    p = h.params
    try:
        h.cls(h.config(no_such_option_for_pdx="1"))
    except Exception as exc:
        one_line_error(exc, "an unknown -o option")
    else:
        raise AssertionError("an unknown -o option was accepted; Backend.__init__ refuses them: call it")
    for key, value in p.bad_options.items():
        _refuses(h, f"-o {key}={value}", lambda b: b.load(h.model), **{key: value})
    if p.broken_model and not h.target.options.get("url"):
        broken = truncated(h.model, h.workdir)
        _refuses(h, f"loading and running {broken.path} (a model cut in half)",
                 lambda b: (b.load(broken), list(b.run(TestSpec(p.n_prompt, 0), 1, 0))))


def _refuses(h: Harness, doing: str, use, **options: str) -> None:
    backend = None
    try:
        backend = h.cls(h.config(**options))
        use(backend)
    except Exception as exc:
        one_line_error(exc, doing)
    else:
        raise AssertionError(f"{doing} was accepted")
    finally:
        if backend is not None:
            backend.close()


def check_serving(h: Harness) -> None:
    p = h.params
    spec = ServeSpec("load", p.n_prompt, p.n_gen, concurrency=2, n_requests=4)
    if not h.cls.serves:
        assert h.backend.unsupported(spec), f"{h.cls.name} serves nothing, so unsupported() must say so for {spec.name}"
        return
    result = h.run(spec, 1, 0)
    (sample,) = result.samples
    assert len(sample.requests) == 4, f"{spec.name}: {len(sample.requests)} requests recorded, not 4"
    for record in sample.requests:
        check_request(spec, record)
        assert (record.n_prompt, record.n_gen) == (p.n_prompt, p.n_gen), f"{spec.name}: request {record.idx} sizes"
    assert (sample.n_prompt, sample.n_gen) == (4 * p.n_prompt, 4 * p.n_gen), f"{spec.name}: sample token counts"
    json_ready(sample.to_dict(), f"{spec.name}: sample")


def leftovers(before: processes.Snapshot, during: processes.Snapshot | None) -> list[processes.Proc] | None:
    """The processes left since ``before``; None where ``ps`` cannot say now (gone, or timed out), and
    the process check is skipped as it is where ``ps`` is missing from the start."""
    now = processes.snapshot()
    return None if now is None else now.leftovers(before, during)


def check_cancel_and_close(h: Harness, grace_s: float = 10.0) -> None:
    """Ctrl-C in the middle of a repetition: it must reach the caller, leave nothing running that the
    repetition started, leave the backend usable, and close() must then release everything."""
    p = h.params
    test = TestSpec(0, p.cancel_gen)
    one = h.run(test, 1, 0)
    fired, raised = interrupt_during(lambda: h.backend.run(test, CANCEL_REPETITIONS, 0), after_s=one.wall_ns / 2e9)
    assert fired, (f"{CANCEL_REPETITIONS} repetitions of {test.name} ended before half of one had passed: "
                   "no interrupt was sent")
    assert raised, "Ctrl-C in the middle of run() did not reach its caller: the backend swallowed KeyboardInterrupt"
    now = processes.snapshot()
    if now is not None and h.loaded is not None:
        extra = now.leftovers(h.loaded)
        assert not extra, f"the interrupted run left processes behind: {extra}"
    again = h.run(TestSpec(0, p.n_gen), 1, 0)
    check_samples(TestSpec(0, p.n_gen), again, 1)
    before, during = h.before, h.loaded
    h.close()
    if before is None:
        return
    deadline = time.monotonic() + grace_s
    while (left := leftovers(before, during)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"close() left processes running: {left}"


ALL = (check_manifest, check_exact_tokens, check_warmup, check_depth, check_errors, check_serving,
       check_cancel_and_close)


def run_contract(h: Harness) -> None:
    """Every check in turn (the one-fixture form); the first that fails names itself."""
    for check in ALL:
        try:
            check(h)
        except AssertionError as exc:
            raise AssertionError(f"{check.__name__}: {exc}") from None
