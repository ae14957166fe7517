"""pdx's built-in meters (pdx.measure.energy.zeus_meters) through Zeus's real readers, driven by replayed
counters: NVML's functions answered from a replay, RAPL's sysfs files laid out in a folder.

Neither replay is a recording yet: this VM has no NVIDIA GPU and no RAPL, and no GPU machine was
lent when these were written. The NVML replay follows NVML's API (a board's energy in mJ since the
driver loaded, moving in steps; Volta and later only); the RAPL files follow the kernel's powercap
layout (energy_uj, max_energy_range_uj, name; a dram subzone). So the RAPL and NVML meters are
untested on real counters until the NVML trace recorded on an H200 (shared/recorded/h200/nvml-trace-h200.json)
and a RAPL machine's files replace them. Runs in tox -e tools, which installs pdx[energy]."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("zeus")
pynvml = pytest.importorskip("pynvml")

from pdx.measure.energy import trace as trace_module  # noqa: E402
from pdx.measure.energy import zeus_meters  # noqa: E402
from pdx.contract.meter import MeterUnavailable  # noqa: E402
from pdx.measure.energy.trace import Trace  # noqa: E402

pytestmark = pytest.mark.energy


@pytest.fixture
def fresh_zeus(monkeypatch):
    """Zeus keeps its device managers as module singletons; each test starts without them."""
    import zeus.device.cpu as cpu
    import zeus.device.cpu.rapl as rapl
    import zeus.device.gpu as gpu
    import zeus.device.gpu.nvidia as nvidia

    monkeypatch.setattr(gpu, "_gpus", None)
    monkeypatch.setattr(cpu, "_cpus", None)
    nvidia.nvml_is_available.cache_clear()
    rapl.rapl_is_available.cache_clear()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("ZEUSD_SOCK_PATH", raising=False)
    yield
    nvidia.nvml_is_available.cache_clear()
    rapl.rapl_is_available.cache_clear()


# --- NVML ------------------------------------------------------------------------------------------

# Two boards: an H200 (Hopper) whose counter steps by what 100 ms at ~300 W draws, a P100 (Pascal)
# with no energy counter. Millijoules since the driver loaded.
H200_MJ = [81_200_000_000 + 30_000 * (i // 5) for i in range(60)]  # a step every fifth 20 ms read: 100 ms


class ReplayNVML:
    def __init__(self, monkeypatch, counters):
        self.counters = {0: iter(counters)}
        boards = {0: ("NVIDIA "
                      "H200", pynvml.NVML_DEVICE_ARCH_HOPPER), 1: ("Tesla "
                                                                   "P100-PCIE-16GB", pynvml.NVML_DEVICE_ARCH_PASCAL)}

        def not_supported(handle):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

        for name, value in {
            "nvmlInit": lambda: None,
            "nvmlDeviceGetCount": lambda: len(boards),
            "nvmlDeviceGetHandleByIndex": lambda index: index,
            "nvmlDeviceGetC2cModeInfoV": not_supported,
            "nvmlDeviceGetName": lambda handle: boards[handle][0],
            "nvmlDeviceGetArchitecture": lambda handle: boards[handle][1],
            "nvmlDeviceGetTotalEnergyConsumption": lambda handle: next(self.counters[handle]),
        }.items():
            monkeypatch.setattr(pynvml, name, value)


def test_nvml_gives_one_meter_per_board_with_an_energy_counter(fresh_zeus, monkeypatch):
    ReplayNVML(monkeypatch, H200_MJ)
    (meter,) = zeus_meters.find_gpus()  # the P100 has no counter: left out
    assert (meter.name, meter.covers, meter.device) == ("gpu:0", "gpu board", "NVIDIA H200")
    assert meter.source.startswith("zeus 0.") and meter.source.endswith("over NVML")
    assert meter.read() == 81_200_000.0  # mJ -> J


def test_a_window_of_the_nvml_replay_reads_its_joules(fresh_zeus, monkeypatch):
    ReplayNVML(monkeypatch, H200_MJ)
    (meter,) = zeus_meters.find_gpus()
    clock = {"ns": 10**9}
    monkeypatch.setattr(trace_module.time, "monotonic_ns", lambda: clock["ns"])
    trace = Trace([meter])
    for _ in range(50):  # 1 s, read every 20 ms
        trace.read_now()
        clock["ns"] += 20_000_000
    # Over 0.8 s from the first reading the counter stepped 8 times by 30 J: 240 J, 300 W.
    assert trace.joules([(10**9, 10**9 + 800_000_000)])["gpu:0"] == pytest.approx(240.0)
    assert trace.resolution_s() == pytest.approx(0.1)


def test_no_nvml_says_so_in_a_few_words(fresh_zeus, monkeypatch):
    def fails():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", fails)
    import zeus.device.gpu as gpu

    monkeypatch.setattr(gpu, "amdsmi_is_available", lambda: False)
    with pytest.raises(MeterUnavailable, match="^no NVML or AMD SMI$"):
        zeus_meters.find_gpus()


# --- RAPL ------------------------------------------------------------------------------------------

MAX_UJ = 262_143_328_850  # a common max_energy_range_uj: 2^32 units of 61 uJ


def _zone(path, name, energy_uj):
    path.mkdir(parents=True)
    (path / "name").write_text(f"{name}\n")
    (path / "energy_uj").write_text(f"{energy_uj}\n")
    (path / "max_energy_range_uj").write_text(f"{MAX_UJ}\n")
    return path / "energy_uj"


@pytest.fixture
def powercap(tmp_path, fresh_zeus, monkeypatch):
    """The powercap tree of a one-socket machine with a DRAM zone, as the kernel lays it out."""
    import zeus.device.cpu.rapl as rapl

    root = tmp_path / "intel-rapl"
    package = _zone(root / "intel-rapl:0", "package-0", 1_000_000_000)
    _zone(root / "intel-rapl:0" / "intel-rapl:0:0", "core", 600_000_000)
    dram = _zone(root / "intel-rapl:0" / "intel-rapl:0:1", "dram", 200_000_000)
    monkeypatch.setattr(rapl, "RAPL_DIR", str(root))
    return package, dram


def test_rapl_gives_the_package_and_its_dram_apart(powercap):
    package, dram = powercap
    meters = {m.name: m for m in zeus_meters.find_rapl()}
    assert {n: m.covers for n, m in meters.items()} == {"rapl:0": "cpu package", "rapl:0:dram": "dram"}
    assert meters["rapl:0"].read() == pytest.approx(1000.0) and meters["rapl:0:dram"].read() == pytest.approx(200.0)
    package.write_text("1045000000\n")  # 45 J later (a package at 90 W for half a second)
    dram.write_text("206000000\n")
    assert meters["rapl:0"].read() == pytest.approx(1045.0) and meters["rapl:0:dram"].read() == pytest.approx(206.0)


def test_a_rapl_counter_that_wraps_keeps_counting_up(powercap):
    """Zeus watches each counter from a process of its own and adds the range at each wrap."""
    package, _ = powercap
    package.write_text(f"{MAX_UJ - 50_000_000}\n")  # 50 J below the top: Zeus polls every 0.1 s here
    (meter,) = [m for m in zeus_meters.find_rapl() if m.name == "rapl:0"]
    before = meter.read()
    time.sleep(2.0)  # its watcher starts (a spawned interpreter) and reads the counter near the top
    package.write_text("30000000\n")  # wrapped: 80 J after the reading above
    deadline = time.monotonic() + 20
    while (after := meter.read()) < before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert after - before == pytest.approx(80.0)


def test_no_rapl_says_so(fresh_zeus, monkeypatch, tmp_path):
    import zeus.device.cpu.rapl as rapl

    monkeypatch.setattr(rapl, "RAPL_DIR", str(tmp_path / "absent"))
    monkeypatch.setattr(rapl, "CONTAINER_RAPL_DIR", str(tmp_path / "absent-too"))
    with pytest.raises(MeterUnavailable, match="^no RAPL$"):
        zeus_meters.find_rapl()


def test_no_apple_soc_here_says_so(fresh_zeus, monkeypatch):
    import zeus.device.soc as soc

    monkeypatch.setattr(soc, "_soc", None)
    with pytest.raises(MeterUnavailable, match="^no Apple SoC counters$"):
        zeus_meters.find_apple()


# --- Apple SoC -------------------------------------------------------------------------------------

class ReplayAppleMonitor:
    """zeus-apple-silicon's AppleEnergyMonitor answered from a replay: cumulative mJ per part, as IOReport's
    energy model reports an M-series SoC (the efficiency/performance split and per-core lists left out;
    this M2-like SoC reports no separate GPU SRAM). Not a recording: no Mac was at hand."""

    READINGS = [dict(cpu_total_mj=1_000 + 900 * i, gpu_mj=500 + 2_100 * i, gpu_sram_mj=None, ane_mj=0,
                     dram_mj=300 + 400 * i) for i in range(10)]

    def __init__(self):
        self.calls = 0

    def get_cumulative_energy(self):
        import types

        reading = self.READINGS[min(self.calls, len(self.READINGS) - 1)]
        self.calls += 1
        fields = ("efficiency_cores_mj", "performance_cores_mj", "efficiency_cluster_mj", "performance_cluster_mj",
                  "efficiency_core_manager_mj", "performance_core_manager_mj")
        return types.SimpleNamespace(**reading, **dict.fromkeys(fields))


def test_an_apple_soc_gives_its_parts_apart_and_none_twice(fresh_zeus, monkeypatch):
    import types

    import zeus.device.soc as soc
    import zeus.device.soc.apple as apple

    monkeypatch.setattr(soc, "_soc", None)
    monkeypatch.setattr(soc, "apple_silicon_is_available", lambda: True)
    monkeypatch.setattr(apple, "zeus_apple_silicon", types.SimpleNamespace(AppleEnergyMonitor=ReplayAppleMonitor))
    meters = {m.name: m for m in zeus_meters.find_apple()}
    # The ANE reads 0 (it is there, idle); the GPU's SRAM is not reported, so the GPU meter is its own counter.
    assert {n: m.covers for n, m in meters.items()} == {"soc:cpu": "soc cpu", "soc:gpu": "soc gpu",
                                                        "soc:ane": "soc ane", "soc:dram": "soc dram"}
    first = {n: m.read() for n, m in meters.items()}
    later = {n: m.read() for n, m in meters.items()}
    # Each read is one reading of the monitor: the four parts moved by 0.9, 2.1, 0 and 0.4 J per reading, x4 reads.
    assert later["soc:cpu"] - first["soc:cpu"] == pytest.approx(4 * 0.9)
    assert later["soc:gpu"] - first["soc:gpu"] == pytest.approx(4 * 2.1)
    assert later["soc:ane"] == first["soc:ane"] == 0.0
    assert later["soc:dram"] - first["soc:dram"] == pytest.approx(4 * 0.4)
