"""Which figures a run, an imported table or ``pdx ceiling`` is judged by, where that means
probing this machine or reading its cached probes: the one place the ceilings meet the probes
(the domain's ceilings only compute with the figures they are handed).

Every probe is measured here with the conditions it ran under (:data:`WATCH`: pdx.measure.conditions'
snapshot and measure over its window), and judged by them: a probe taken under load
(:func:`load_notes`: other processes used ``BUSY_CORES`` or more, or any other note of the
conditions; where other processes' CPU use could not be read, the load average as it started)
gives figures that are likely low, and every ceiling from it says so (:func:`caveat`).
"""

from __future__ import annotations

from dataclasses import replace

from pdx.measure import conditions
from pdx.measure import hardware as this_machine  # a run's machine is a dict named hardware below
from pdx.domain.ceilings import CEILINGS_VERSION, PROBE, basis_record, chip_figures, compute_dtype, given_figures
from pdx.domain.ceilings import placement
from pdx.domain.ceilings.basis import RunBasis, model_of, run_basis
from pdx.domain.ceilings.imported import Given
from pdx.domain.ceilings.roofline import HardwareFigures
from pdx.contract.errors import PdxError
from pdx.domain.hardware import catalog
from pdx.measure.hardware import probe
from pdx.base.units import parse_bandwidth, parse_flops


# The one command that replaces a probe taken under load.
REPROBE = "pdx hw probe --force"


def load_notes(result: dict) -> list[str]:
    """What else the machine did while the probe ran, in words ([] when it was quiet): the notes of its
    conditions (:func:`pdx.measure.conditions.notes`); where other processes' CPU use was not read, the load
    average as it started (:func:`pdx.measure.hardware.probe.load_average_notes`)."""
    measured = result.get("conditions")
    found = conditions.notes(measured)
    if measured and measured.get("other_cpu_cores") is not None:
        return found
    return found + probe.load_average_notes(result)


def busy(result: dict) -> bool:
    """Whether the probe ran under load (:func:`load_notes`): its figures are likely low."""
    return bool(load_notes(result))


def caveat(result: dict) -> str | None:
    """What every ceiling from a probe taken under load says about it, with the command that replaces
    it; None for a quiet probe."""
    found = load_notes(result)
    if not found:
        return None
    return (f"the probe of {result.get('measured_at', '?')} ran under load ({', '.join(found)}), so its figures "
            f"are likely low; run `{REPROBE}` on a quiet machine")


class ConditionsWatch:
    """pdx.measure.conditions over a probe's window (:class:`pdx.measure.hardware.probe.Watch`)."""

    def start(self) -> conditions.Snapshot:
        return conditions.snapshot()

    def conditions(self, started: conditions.Snapshot) -> dict:
        return dict(conditions.measure(started))

    def notes(self, result: dict) -> list[str]:
        return load_notes(result)


WATCH = ConditionsWatch()


def measure_probe(machine: str, threads: int, force: bool = False, device: str = "cpu", **sizes) -> dict:
    """:func:`pdx.measure.hardware.probe.measure` with the conditions each probe ran under (:data:`WATCH`)."""
    return probe.measure(machine, threads, force=force, device=device, watch=WATCH, **sizes)


def probe_figures(result: dict, dtype: str = "fp32") -> HardwareFigures:
    bw = result["bandwidth"]
    mm = result["matmul"]["f32"]
    used = "f32 sgemm" if dtype in ("fp32", "fp16", "bf16") else f"f32 sgemm (proxy for {dtype})"
    # a device probe measured the model's own data type
    own = next((k for k in probe.DEVICE_MATMUL.get(dtype, ()) if k in result["matmul"]), None)
    if result.get("device") and own:
        mm, used = result["matmul"][own], f"{own} {result['matmul'][own]['dtype']}"
    return HardwareFigures(
        bandwidth=bw["best"], flops=mm["flops"], flops_dtype=used, source="probe",
        ref=result.get("cache_path") or f"{result.get('machine')}-t{result['threads']}",
        label=f"probe{' ' + result['device'] if result.get('device') else ''}, "
              f"{result['threads']} thread{'s' if result['threads'] != 1 else ''}",
        method=f"bandwidth: {(result.get('method') or probe.METHOD)['bandwidth']} (best: {bw['best_kernel']}); "
               f"matmul: {(result.get('method') or probe.METHOD)['matmul']}",
        caveat=caveat(result),
    )


def measured_basis(hardware: dict, model: dict, threads: int, settings: dict, details: dict,
                   name: str | None = None, reprobe: bool = False, remote: bool = False) -> RunBasis:
    """The ceiling basis of a run measured here (:func:`pdx.domain.ceilings.basis.run_basis`): ``hardware``,
    this machine (:func:`pdx.measure.hardware.detect`); ``model``, ``ModelInfo.to_dict()``; ``settings`` and
    ``details``, the loaded engine's; ``name``, ``--hardware``; ``remote``, a server elsewhere. No figures
    for a model known only by name, or a server elsewhere with no chip named: this machine's would judge
    nothing."""
    if not model.get("n_params") or (remote and not name):
        reason = "the model's dimensions are unknown" if not model.get("n_params") else \
            "the server runs elsewhere; give --hardware NAME to judge it by a catalog chip"
        figures: list[HardwareFigures] = []
        record: dict = {"version": CEILINGS_VERSION, "source": "none", "reason": reason}
    else:
        figures, record = resolve_sources(hardware, model, threads, name, reprobe, details.get("device"),
                                          details.get("probe_device"))
    # Where the weights live is a GPU machine's question; a CPU build ignores -ngl.
    place = placement.from_settings(settings, model.get("n_layers")) if figures and hardware.get("gpus") else None
    draft = (settings.get("speculation") or {}).get("draft_model") or {}
    return run_basis(model_of(model, settings), settings, figures, record, place, draft_bytes=draft.get("file_bytes"))


def resolve(hardware: dict, model: dict, threads: int, name: str | None = None, reprobe: bool = False,
            device: str | None = None, probe_device: str | None = None) -> tuple[HardwareFigures | None, dict]:
    """The figures a run is judged against, and the record of them stored with the run."""
    figures, basis = resolve_sources(hardware, model, threads, name, reprobe, device, probe_device)
    return (figures[0] if figures else None), basis


def resolve_sources(hardware: dict, model: dict, threads: int, name: str | None = None, reprobe: bool = False,
                    device: str | None = None, probe_device: str | None = None
                    ) -> tuple[list[HardwareFigures], dict]:
    """Every set of figures a run is judged against (a vendor's, and a cached probe of the device
    the engine runs on), first the one named or detected; and their record.

    ``probe_device`` (a backend's ``details["probe_device"]``, e.g. ``mlx:gpu``) names the device probe
    that measures where the engine computes; without it the CPU probes stand in."""
    dtype = compute_dtype(model.get("dtype", ""))
    if name == PROBE:  # the user says the engine runs on the CPU the probes measure
        name, device = None, "cpu"
    chip = catalog.lookup(name) if name else None
    on_accelerator = device != "cpu" and (device == "gpu" or hardware.get("kind") in ("gpu", "soc"))
    if chip is None and hardware.get("catalog") and on_accelerator:
        chip = catalog.get(hardware["catalog"])
    if chip is not None:
        figures = chip_figures(chip, dtype)
        basis = basis_record(figures, dtype, chip=chip.figures())
        probed = device_probe(hardware, threads, probe_device or ("gpu" if on_accelerator else "cpu"))
        if probed is None:
            return [figures], basis
        second = probe_figures(probed, dtype)
        return [figures, second], basis | {"probe": probed, "probe_figures": second.to_dict()}
    if on_accelerator and not probe_device:
        reason = f"{hardware.get('name')} is not in the hardware catalog; give --hardware NAME (see `pdx hw list`)"
        return [], {"version": CEILINGS_VERSION, "source": "none", "reason": reason}
    try:
        result = measure_probe(hardware["id"], threads, force=reprobe, device=probe_device or "cpu")
    except PdxError as exc:
        return [], {"version": CEILINGS_VERSION, "source": "none", "reason": str(exc)}
    figures = probe_figures(result, dtype)
    return [figures], basis_record(figures, dtype, probe={k: v for k, v in result.items() if k != "cache_path"})


def device_probe(hardware: dict, threads: int, device: str) -> dict | None:
    """A cached probe of the device the engine computes on, or None (never measured here: a run
    named its figures). The CPU probes are pdx's own; an accelerator's come from a device probe
    (``mlx:gpu``, ``cuda:0``: ``pdx hw probe --device``) once one is cached at its default sizes."""
    if not hardware.get("id") or device == "gpu":  # an accelerator no device probe names
        return None
    if device == "cpu":
        result = probe.cached(hardware["id"], threads)
    else:
        name = probe.device_name(device)
        result = probe.cached_device(hardware["id"], name, threads)
    if not result or "bandwidth" not in result or "f32" not in (result.get("matmul") or {}):
        return None
    return result


def hardware_figures(name: str | None, bandwidth: str | None, flops: str | None, dtype: str,
                     threads: int | None = None) -> HardwareFigures:
    """A catalog chip, this machine's probe (``probe``), figures given on the command line, or
    either with some figures overridden."""
    if not (name or bandwidth or flops):
        raise PdxError("no hardware given", "give --hardware NAME (see `pdx hw list`) or --bandwidth and --flops")
    bandwidth_ = parse_bandwidth(bandwidth) if bandwidth else None
    flops_ = parse_flops(flops) if flops else None
    if name and name.lower() == PROBE:
        base = probe_figures(_this_machine_probe(threads), dtype)
        base = replace(base, bandwidth=bandwidth_ or base.bandwidth, flops=flops_ or base.flops)
        return replace(base, flops_dtype=f"{dtype} (given)") if flops_ else base
    given = Given.parse(name) if name else Given()  # "2x RTX 3090", "M1 8GB": as pdx import reads them
    figures = given.configured(given_figures(catalog.lookup(given.hardware) if given.hardware else None, dtype,
                                             bandwidth_, flops_))
    return placement.across_devices(figures, given.devices or 1, None)[0]


def hardware_sources(name: str | None, bandwidth: str | None, flops: str | None, dtype: str,
                     threads: int | None = None) -> list[HardwareFigures]:
    """The figures to judge by: the ones named, and, when the chip named is this machine's and a
    probe of it is cached, the probe's too (two ceilings, the lower binds)."""
    first = hardware_figures(name, bandwidth, flops, dtype, threads)
    if first.source != "catalog" or bandwidth or flops:
        return [first]
    machine = this_machine.detect()
    if machine.get("catalog") != first.ref:
        return [first]
    on_cpu = machine.get("kind") not in ("gpu", "soc")
    probed = device_probe(machine, threads or this_machine.default_threads(), "cpu" if on_cpu else "gpu")
    return [first, probe_figures(probed, dtype)] if probed else [first]


def _this_machine_probe(threads: int | None) -> dict:
    machine = this_machine.detect()
    return measure_probe(machine["id"], threads or this_machine.default_threads())
