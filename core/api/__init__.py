"""The library API behind the CLI: ``run_benchmark`` and the registry reads.

CLI -> api -> runner -> backend; results -> registry. Everything the CLI
does is callable from Python with the same checks and the same records.
"""

from __future__ import annotations

import json
import platform
import re
import shlex
import sys
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Sequence

import pdx
from pdx.domain import ceilings
from pdx.domain.hardware import catalog
from pdx.measure import hardware
from pdx.measure import environment, model_arg
from pdx.base import plugin_manager
from pdx.domain.adaptive import StopRule
from pdx.contract.backend import Backend, BackendConfig, EngineInfo
from pdx.domain.ceilings.basis import RunBasis
from pdx.measure import ceiling_sources as sources
from pdx.domain.ceilings.roofline import ModelFigures
from pdx.measure.conditions import gpu_memory
from pdx.measure.energy import session as energy_session
from pdx.domain.energy.figures import DEFAULT_CURRENCY, DEFAULT_PRICE_KWH, why_none
from pdx.measure.energy.session import Metering
from pdx.contract.errors import PdxError, interruption
from pdx.domain.models import ModelInfo
from pdx.registry import Registry, RunStart
from pdx.registry.records import environment_id
from pdx.measure.runner import Progress, TestOutcome, run_tests
from pdx.measure.runner import run_interleaved as interleave
from pdx.base.secrets import scrub, scrub_text
from pdx.domain.serving import grid
from pdx.reports.results import derive_stats, read_run
from pdx.domain.workload import Workload, build_workload

# Tried in this order when no backend is named: the first available one runs.
DEFAULT_BACKENDS = ("llamacpp", "mlx", "vllm")


@dataclass
class BenchConfig:
    backend: str | None = None  # None: the first available of DEFAULT_BACKENDS
    model: str | None = None  # None: the default synthetic model
    workload: Workload = field(default_factory=build_workload)
    threads: int | None = None  # None: the physical cores this process may use
    options: dict[str, str] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    argv: list[str] | None = None
    parent_id: str | None = None
    hardware: str | None = None  # a catalog name whose figures set the ceilings; None: detected or probed
    reprobe: bool = False  # measure the probes again instead of using the cached figures
    delay: float = 0.0  # seconds of idle before every test but the first (cool-down)
    # Called once the engine is loaded, before anything is stored: returns the
    # run's provenance or raises PdxError to refuse (pdx rerun's drift check).
    verify: Callable[[ModelInfo, EngineInfo], dict] | None = None
    api_key: str | None = field(default=None, repr=False)  # for servers; never stored
    energy: bool = True  # read this machine's energy meters, where it has any (pdx.domain.energy)
    price: tuple[float, str] | None = None  # per kWh and currency; None: pdx.domain.energy.figures' default, said so


def default_backend(options: dict[str, str] | None = None) -> str:
    found = plugin_manager.backends()
    reasons = []
    for name in DEFAULT_BACKENDS:
        if name in found:
            status = found[name].availability(options)
            if status.available:
                return name
            reasons.append(f"{name}: {status.reason}")
    hint = "install llama.cpp with `pdx llamacpp install`, or see `pdx backends`"
    raise PdxError(f"no backend is available on this machine ({'; '.join(reasons) or 'none installed'})", hint)


def plan(config: BenchConfig, backends: Sequence[str | None] | None = None,
         threads: Sequence[int | None] | None = None,
         variants: list[dict[str, str]] | None = None) -> list[BenchConfig]:
    """One run per backend, thread count and option variant (e.g. server flags), in that order."""
    return [
        replace(config, backend=b, threads=t, options=config.options | v)
        for b in (backends or [config.backend])
        for t in (threads or [config.threads])
        for v in (variants or [{}])
    ]


@dataclass
class SweepPlan:
    """A server-grid sweep's runs still to make (:func:`plan_sweep`)."""

    sweep_id: str
    configs: list[BenchConfig]
    skipped: list[tuple[str, dict[str, str]]]  # (backend, settings) whose complete run the registry holds


def plan_sweep(config: BenchConfig, backends: list[str], grid_text: str, registry: Registry,
               sweep_id: str | None = None) -> SweepPlan:
    """One run per backend and combination of ``--server-grid`` (:mod:`pdx.domain.serving.grid`), in an
    interleaved order, each tagged with its sweep and settings; ``sweep_id``: resume that sweep,
    leaving out the combinations whose complete run ``registry`` holds."""
    if config.options.get("url"):
        raise PdxError("--server-grid: pdx starts the server anew for each combination, and a server at --url "
                       "is not its to restart", "leave --url out, so pdx starts its own server")
    sweep_id = grid.check_sweep_id(sweep_id) if sweep_id else grid.new_sweep_id()
    done = {(run["backend"], frozenset(grid.settings(run["tags"]).items()))
            for run in registry.runs(tag=grid.SWEEP_TAG + sweep_id, status="complete")}
    base_args = shlex.split(config.options.get("server_args", ""))
    pending, skipped = [], []
    for name in backends:
        keys = getattr(plugin_manager.get_backend(name), "grid_keys", None) or {}
        if not keys:
            raise PdxError(f"--server-grid: backend {name} has no server flags pdx can sweep",
                           "use a backend that starts its own server: llamacpp-server or vllm-server")
        for combo in grid.combinations(grid.read_grid(grid_text, keys)):
            if (name, frozenset(combo.items())) in done:
                skipped.append((name, combo))
            else:
                args = shlex.join(base_args + grid.server_flags(combo, keys))
                pending.append(replace(config, backend=name, options=config.options | {"server_args": args},
                                       tags=[*config.tags, *grid.tags(sweep_id, combo)]))
    return SweepPlan(sweep_id, grid.interleaved(pending, int(sweep_id, 16)), skipped)


def sweep_runs(registry: Registry, sweep_id: str) -> list[dict]:
    """A sweep's complete runs, newest first, with their statistics."""
    return [read_run(registry, run_id)
            for run_id in registry.run_ids(tag=grid.SWEEP_TAG + grid.check_sweep_id(sweep_id), status="complete")]


@dataclass
class _Opened:
    """A run started in the registry with its backend loaded, ready for its tests."""

    run_id: str
    backend: Backend
    save: Callable[[TestOutcome], None]
    rule: StopRule | None
    metering: Metering | None


def _open(config: BenchConfig, registry: Registry, progress: Progress | None, stack: ExitStack) -> _Opened:
    """Check ``config``, load its backend (closed when ``stack`` is) and start its run in the registry."""
    given = model_arg.parse(config.model)  # a bad path fails before any engine work
    if config.hardware and config.hardware != ceilings.PROBE:
        catalog.lookup(config.hardware)  # an unknown name fails before any engine work too
    name = config.backend or default_backend(config.options)
    if not plugin_manager.get_backend(name).serves and any(t.kind == "serve" for t in config.workload.tests):
        servers = ", ".join(n for n, b in sorted(plugin_manager.backends().items()) if b.serves)
        raise PdxError(f"backend {name} runs no serving scenarios", f"use a server backend: {servers}")
    backend_cls = plugin_manager.require_available(name, config.options)
    threads = config.threads or hardware.default_threads()
    workload = config.workload
    backend_config = BackendConfig(threads=threads, options=dict(config.options), seed=workload.seed,
                                   api_key=config.api_key)
    model = model_arg.resolve(given or backend_cls.served_model(backend_config), backend_cls)
    manifest = environment.collect(threads, workload.seed, config.argv)
    machine = hardware.detect()
    backend = stack.enter_context(backend_cls(backend_config))
    engine = backend.load(model)
    # What is stored carries no secret; the backend keeps what it was given.
    recorded = replace(engine, settings=scrub(engine.settings), details=scrub(engine.details))
    provenance = config.verify(model, engine) if config.verify else {}
    basis = sources.measured_basis(machine, model.to_dict(), threads, engine.settings, engine.details,
                                   config.hardware, config.reprobe, remote=bool(config.options.get("url")))
    judge = _ceiling_judge(basis)
    resident = _residency_check(basis.model, workload, progress)
    rule = StopRule(workload.target_ci, workload.max_repetitions) if workload.target_ci else None
    run_id = registry.start_run(
        RunStart(
            id=uuid.uuid4().hex,
            backend=name,
            engine=recorded,
            model=model,
            hardware=machine,
            environment=manifest,
            environment_id=environment_id(manifest),
            workload=workload.to_dict(),
            threads=threads,
            options=scrub(dict(config.options)),
            command=manifest["command"],
            pdx_version=pdx.__version__,
            tags=config.tags,
            parent_id=config.parent_id,
            ceiling_basis=basis.record,
            provenance=provenance,
        )
    )
    return _Opened(run_id, backend,
                   lambda outcome: registry.save_test(run_id, _scrubbed(resident(judge(outcome))).to_record()),
                   rule, _metering(config))


@contextmanager
def _finishing(registry: Registry, run_ids: Callable[[], list[str]]) -> Iterator[None]:
    """Marks the runs ``run_ids()`` names interrupted or failed where the block raises."""
    try:
        yield
    except KeyboardInterrupt as exc:
        for run_id in run_ids():
            registry.finish_run(run_id, "interrupted", interruption(exc))
        raise
    except BaseException as exc:
        for run_id in run_ids():
            registry.finish_run(run_id, "failed", scrub_text(f"{type(exc).__name__}: {exc}"))
        raise


def _finish(registry: Registry, run_id: str, outcomes: list[TestOutcome]) -> None:
    ok = sum(o.status == "ok" for o in outcomes)
    failed = sum(o.status == "failed" for o in outcomes)
    status = "failed" if not ok else "partial" if failed else "complete"  # skipped tests are not failures
    errors = "; ".join(f"{o.test.name}: {o.error}" for o in outcomes if o.error)
    registry.finish_run(run_id, status, scrub_text(errors) or None)


def run_benchmark(config: BenchConfig, registry: Registry, progress: Progress | None = None) -> dict:
    """Run one benchmark and store it test by test; returns the stored run."""
    workload = config.workload
    with ExitStack() as stack:
        opened = _open(config, registry, progress, stack)
        with _finishing(registry, lambda: [opened.run_id]):
            outcomes = run_tests(
                opened.backend, workload.tests, workload.repetitions, workload.warmup, save=opened.save,
                progress=progress, rule=opened.rule, delay=config.delay, metering=opened.metering,
            )
        _finish(registry, opened.run_id, outcomes)
    return read_run(registry, opened.run_id)


def run_interleaved(configs: list[BenchConfig], registry: Registry, progress: Progress | None = None) -> list[dict]:
    """One run per config (engine versions, say) of one workload, their repetitions taken in turn:
    each test runs one repetition on the first, then on the second, ..., and again, so that a drift
    of the machine over the test falls on all of them alike (:func:`pdx.measure.runner.run_interleaved`). No
    energy is read (the meters' idle and per-test windows are a single run's) and no adaptive stop."""
    workloads = {json.dumps(c.workload.to_dict(), sort_keys=True) for c in configs}
    if len(workloads) != 1:
        raise PdxError("interleaved runs must share one workload", "give the same tests to every run")
    workload = configs[0].workload
    if workload.target_ci:
        raise PdxError("interleaved runs take a fixed count of repetitions", "give -r N, without auto or --target-ci")
    opened: list[_Opened] = []
    with ExitStack() as stack:
        with _finishing(registry, lambda: [o.run_id for o in opened]):
            for config in configs:
                opened.append(_open(replace(config, energy=False), registry, progress, stack))
            outcomes = interleave(
                [o.backend for o in opened], workload.tests, workload.repetitions, workload.warmup,
                [o.save for o in opened], progress, configs[0].delay)
        for run, done in zip(opened, outcomes):
            _finish(registry, run.run_id, done)
    return [read_run(registry, o.run_id) for o in opened]


def engine_versions(config: BenchConfig, versions: list[str], say: Callable[[str], None] = lambda line: None
                    ) -> list[BenchConfig]:
    """``config`` once per engine version, each pointed at that version's build (found cached or built
    now, as the engine's :class:`~pdx.contract.engine_build.EngineBuilder` does; ``say`` tells which).
    A backend whose engine pdx cannot build at a version is a one-line error."""
    if not versions or len(set(versions)) != len(versions):
        raise PdxError(f"--engine-version {','.join(versions)}: give different versions, comma-separated",
                       "e.g. --engine-version 0.3.35,0.3.36")
    for version in versions:  # all checked before any is built (a build takes minutes)
        if not re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}", version):
            raise PdxError(f"--engine-version {version!r} is not a version", "give one like 0.3.36")
    releases = [b for b in plugin_manager.engine_builders().values() if b.release is not None]
    try:
        name = config.backend or default_backend(config.options)
    except PdxError:
        if not releases:
            raise
        name = releases[0].backend  # no engine installed yet: the versions asked for are built now
    builder = next((b for b in releases if name in (b.name, b.backend)), None)
    if builder is None:
        can = ", ".join(f"{b.backend} ({b.releases or 'releases'})" for b in releases) or "none"
        raise PdxError(f"--engine-version: backend {name} runs the one version installed; pdx cannot run "
                       "several versions of its engine yet", f"backends that can: {can}")
    configs = []
    for version in versions:
        built = builder.release(version, say)
        say(f"{version}: {built.label} ({'cached' if built.cached else 'built now'})")
        configs.append(replace(config, backend=builder.backend, options=config.options | built.options))
    return configs


def _metering(config: BenchConfig) -> Metering | None:
    """The run's energy measurement: None when energy is off, this machine has no meter, or the server
    measured runs on another machine (this one's meters would not see its work)."""
    if not config.energy or config.options.get("url"):
        return None
    found = energy_session.find(plugin_manager.meter_sources())
    if not found.meters:
        return None
    price, currency = config.price or (DEFAULT_PRICE_KWH, DEFAULT_CURRENCY)
    return Metering(found.meters, price, currency, "given" if config.price else "default")


def energy_notices(energy: bool, energy_asked: bool, price: tuple[float, str] | None, remote: bool) -> list[str]:
    """What ``--energy`` (``energy_asked``: given on the command line) and ``--price-kwh`` will not do in this
    run, one line each, to say before it starts; [] when they will do what they say."""
    if not energy_asked and price is None:
        return []
    if not energy:
        why, fix = "--no-energy was given", "drop --no-energy"
    elif remote:
        why, fix = "the server at --url runs on another machine, whose work this one's meters do not see", \
            "run pdx on the server's machine"
    else:
        found = energy_session.find(plugin_manager.meter_sources()).to_dict()
        if found["meters"]:
            return []
        # The reasons name what to install where that is the fix (as `pdx hw` says them).
        why, fix = f"this machine has no energy meter ({why_none(found)})", "`pdx hw` lists the meters pdx can read"
    notices = [f"--energy: no J/token in this run: {why}; {fix}"] if energy and energy_asked else []
    if price is not None:
        notices.append(f"--price-kwh {price[0]:g} {price[1]}: unused, no energy is measured to price ({why}); {fix}")
    return notices


def _scrubbed(outcome: TestOutcome) -> TestOutcome:
    """An outcome whose error messages (its own and its requests') carry no secret (a URL's password)."""
    if outcome.error:
        outcome.error = scrub_text(outcome.error)
    for request in [*outcome.requests, *(r for s in outcome.samples for r in s.requests)]:
        if getattr(request, "error", None):
            request.error = scrub_text(request.error)
    return outcome


def _ceiling_judge(basis: RunBasis) -> Callable[[TestOutcome], TestOutcome]:
    """A function that sets an outcome's ceilings by the run's basis (none when no hardware figures are known)."""

    def judge(outcome: TestOutcome) -> TestOutcome:
        if basis.figures:
            test = outcome.to_record()
            outcome.ceilings = basis.judge(test, derive_stats(test))
        return outcome

    return judge


def _kv_tokens(test) -> int:
    return (test.depth + test.n_prompt + test.n_gen) * test.batch


def _residency_check(model: ModelFigures, workload: Workload, progress: Progress | None):
    """On Apple Silicon: warn now about tests whose weights plus KV cache exceed the GPU's memory limit,
    and return a function that adds each test's figures to its conditions."""
    limits = gpu_memory.read(platform.system(), platform.machine())
    if limits is None:
        return lambda outcome: outcome
    need = {id(t): gpu_memory.residency(limits, model.file_bytes, model.kv_bytes_per_token * _kv_tokens(t))
            for t in workload.tests}
    too_big = [t.name for t in workload.tests if not need[id(t)]["fits"]]
    if too_big and progress:
        worst = max(n["need_bytes"] for n in need.values())
        progress.warning(f"{', '.join(too_big)}: the model and its KV cache ({worst / 2**30:.1f} GiB) exceed the "
                         f"GPU's {limits['limit_bytes'] / 2**30:.1f} GiB limit ({limits['limit_source']}); it will "
                         "not stay resident and the figures will measure paging (raise it with `sudo sysctl "
                         "iogpu.wired_limit_mb=N`, or use a smaller model or context)")

    def add(outcome: TestOutcome) -> TestOutcome:
        if outcome.conditions is not None:
            outcome.conditions["gpu_memory"] = need.get(id(outcome.test))
        return outcome

    return add


def hardware_report(threads: int | None = None, run_probe: bool = True, force: bool = False,
                    device: str = "cpu", sizes: dict | None = None) -> dict:
    """This machine: what detection found, its catalog match, and the probes of ``device`` at ``threads``."""
    machine = hardware.detect()
    threads = threads or hardware.default_threads()
    chip = catalog.get(machine["catalog"]) if machine.get("catalog") else None
    report = {"machine": machine, "catalog": chip.figures() if chip else None, "threads": threads,
              "meters": energy_session.find(plugin_manager.meter_sources()).to_dict()}
    if run_probe:
        report["probe"] = sources.measure_probe(machine["id"], threads, force=force, device=device, **(sizes or {}))
    return report


# The runs each registry opened here left out because they did not read: (registry, {run id: why}),
# reported by the CLI once its command is done (pdx.cli.main).
LEFT_OUT: list[tuple[str, dict[str, str]]] = []


def open_registry(url: str | None = None, create: bool = True) -> Registry:
    registry = Registry(url, create)
    LEFT_OUT.append((registry.display_url, registry.unreadable))
    return registry


def command_line() -> list[str]:
    return ["pdx", *sys.argv[1:]]
