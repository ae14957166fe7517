"""Run conditions: real /proc and a real busy process on this machine; recorded
outputs for what cannot exist here.

The CPU-time accounting runs for real (the busy loop is a real process, not
pdx's child). This machine has no cpufreq, thermal zones, battery or Mac, so:
- sysfs trees are rebuilt in tmp_path with the values and file layout the
  Linux kernel's ABI documents (cpufreq in kHz, thermal in millidegrees C,
  power_supply type/online/status/capacity), as a laptop shows them;
- ``pmset -g therm`` / ``pmset -g batt`` and ``sysctl iogpu.wired_limit_mb``
  outputs are replayed as published from real Macs (sources beside each);
- ``mx.device_info()`` is replayed from the dict MLX's own pull request that
  added it printed on an M2 Ultra (ml-explore/mlx#1060).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given, strategies as st

from pdx.measure import conditions
from pdx.measure.conditions import cpu, gpu_memory, machine
from pdx.reports.display.conditions import condition_text

# --- parsers ------------------------------------------------------------------------------------------

def test_proc_stat_and_pid_stat_of_this_machine_parse():
    ticks = cpu.machine_ticks()
    assert ticks and ticks["busy"] > 0
    assert cpu.tree_ticks(os.getpid()) is not None
    assert cpu.parse_pid_stat("12 (a) b) c) S 1 12 12 0 -1 4194304 1 0 0 0 7 3 100 20 20 0 1 0 5 0 0") == (1, 130)


@given(st.lists(st.integers(0, 2**40), min_size=4, max_size=10))
def test_proc_stat_busy_is_user_nice_system_irq_softirq(values):
    parsed = cpu.parse_proc_stat("cpu  " + " ".join(map(str, values)) + "\ncpu0 1 2 3 4\n")
    padded = values + [0] * (10 - len(values))
    assert parsed == {"busy": sum(padded[i] for i in (0, 1, 2, 5, 6)), "steal": padded[7]}


@given(st.text(max_size=40), st.integers(0, 2**22), st.lists(st.integers(0, 2**31), min_size=4, max_size=4))
def test_pid_stat_survives_any_command_name(name, ppid, times):
    line = f"99 ({name}) R {ppid} 1 1 0 -1 0 0 0 0 0 {' '.join(map(str, times))} 20 0 1 0 5 0 0"
    assert cpu.parse_pid_stat(line) == (ppid, sum(times))


@given(st.text(max_size=300))
def test_every_parser_takes_any_text_without_raising(text):
    assert cpu.parse_proc_stat(text) is None or "busy" in cpu.parse_proc_stat(text)
    cpu.parse_pid_stat(text)
    machine.parse_cpuinfo_mhz(text)
    assert isinstance(machine.parse_pmset_therm(text)["throttled"], bool)
    machine.parse_pmset_batt(text)
    gpu_memory.parse_wired_limit(text)


# From a Q&A thread about a MacBook Pro (Early 2011) that macOS throttled (newbetuts.com, 407192).
PMSET_THERM_THROTTLED = """Note: No thermal warning level has been recorded
Note: No performance warning level has been recorded
2020-11-24 13:10:40 +0100 CPU Power notify
    CPU_Scheduler_Limit     = 100
    CPU_Available_CPUs  = 8
    CPU_Speed_Limit     = 35
"""
# What an Apple Silicon Mac prints when nothing was ever limited.
PMSET_THERM_QUIET = """Note: No thermal warning level has been recorded
Note: No performance warning level has been recorded
Note: No CPU power status has been recorded
"""
# From a script's docstring quoting a Stack Overflow answer (42361337): mains and battery.
PMSET_BATT_AC = """Now drawing from 'AC Power'
 -InternalBattery-0 (id=3735651)\t97%; charged; 0:00 remaining present: true
"""
PMSET_BATT_BATTERY = """Now drawing from 'Battery Power'
 -InternalBattery-0 (id=3735651)\t97%; discharging; (no estimate) present: true
"""


def test_pmset_therm_says_when_macos_limits_the_cpu():
    throttled = machine.parse_pmset_therm(PMSET_THERM_THROTTLED)
    assert throttled["cpu_speed_limit"] == 35 and throttled["cpu_available_cpus"] == 8 and throttled["throttled"]
    assert machine.parse_pmset_therm(PMSET_THERM_QUIET) == {"source": "pmset", "throttled": False}
    assert "CPU speed limited to 35%" in conditions.notes({"thermal": throttled})


def test_pmset_batt_tells_mains_from_battery():
    assert machine.parse_pmset_batt(PMSET_BATT_AC) == {"source": "mains", "battery_percent": 97.0}
    assert machine.parse_pmset_batt(PMSET_BATT_BATTERY) == {"source": "battery", "battery_percent": 97.0}
    assert machine.parse_pmset_batt("") is None
    assert conditions.notes({"power": {"source": "battery"}}) == ["on battery"]


def _write(root, files: dict[str, str]):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def test_a_laptops_sysfs_frequency_thermal_and_battery(tmp_path):
    cpufreq = "devices/system/cpu/cpu{}/cpufreq/"
    _write(tmp_path, {
        **{cpufreq.format(i) + "scaling_cur_freq": str(khz) for i, khz in enumerate((800000, 3400000))},
        **{cpufreq.format(i) + "scaling_governor": "powersave" for i in range(2)},
        **{cpufreq.format(i) + "cpuinfo_max_freq": "4700000" for i in range(2)},
        "class/thermal/thermal_zone0/type": "acpitz", "class/thermal/thermal_zone0/temp": "27800",
        "class/thermal/thermal_zone1/type": "x86_pkg_temp", "class/thermal/thermal_zone1/temp": "71000",
        "class/power_supply/AC/type": "Mains", "class/power_supply/AC/online": "0",
        "class/power_supply/BAT0/type": "Battery", "class/power_supply/BAT0/status": "Discharging",
        "class/power_supply/BAT0/capacity": "64",
    })
    assert machine.frequency(tmp_path, tmp_path) == {"source": "cpufreq", "governor": "powersave", "max_mhz": 4700.0,
                                                     "mhz": 2100.0, "min_mhz": 800.0, "high_mhz": 3400.0}
    thermal = machine.linux_thermal(tmp_path)
    assert thermal["max_celsius"] == 71.0 and [z["zone"] for z in thermal["zones"]] == ["acpitz", "x86_pkg_temp"]
    assert machine.linux_power(tmp_path) == {"source": "battery", "battery_percent": 64.0}
    _write(tmp_path, {"class/power_supply/AC/online": "1", "class/power_supply/BAT0/status": "Charging"})
    assert machine.linux_power(tmp_path)["source"] == "mains"


def test_a_server_without_sensors_records_none_not_zero(tmp_path):
    assert machine.linux_thermal(tmp_path) is None and machine.linux_power(tmp_path) is None
    assert machine.frequency(tmp_path, tmp_path) is None
    # This machine, for real: a VM with "cpu MHz" in /proc/cpuinfo and no cpufreq.
    here = machine.frequency()
    assert here is None or here["mhz"] > 0


# --- Apple Silicon GPU memory (recorded) --------------------------------------------------------------

M2_ULTRA_DEVICE_INFO = {"max_recommended_working_set_size": 188743680000, "max_buffer_length": 115964116992,
                        "architecture": "applegpu_g14d"}  # ml-explore/mlx#1060
WIRED_DEFAULT = "iogpu.wired_limit_mb: 0\n"
WIRED_SET = "iogpu.wired_limit_mb: 26000 -> 26000\n"  # an M1 Max's raised limit (AlexsJones/llmfit#570)


def test_the_working_set_is_the_limit_and_a_model_beyond_it_is_flagged():
    limits = gpu_memory.describe(WIRED_DEFAULT, M2_ULTRA_DEVICE_INFO)
    assert limits["limit_bytes"] == 188743680000 and limits["wired_limit_bytes"] is None
    raised = gpu_memory.describe(WIRED_SET, None)  # no MLX installed: the wired limit stands in
    assert raised["limit_bytes"] == 26000 * 2**20 and raised["limit_source"] == "iogpu.wired_limit_mb"
    assert gpu_memory.describe("", None) is None
    fits = gpu_memory.residency(raised, 20e9, 1e9)
    too_big = gpu_memory.residency(raised, 26e9, 2e9)
    assert fits["fits"] and not too_big["fits"] and too_big["need_bytes"] == 28_000_000_000
    assert conditions.notes({"gpu_memory": fits}) == []
    assert conditions.notes({"gpu_memory": too_big}) == ["model + KV cache exceed the GPU's 25.4 GiB limit"]
    assert "GPU memory 26.1 GiB of 25.4 GiB (DOES NOT FIT)" in condition_text({"gpu_memory": too_big})


def test_no_gpu_limits_anywhere_but_apple_silicon():
    assert gpu_memory.read("Linux", "x86_64") is None and gpu_memory.read("Darwin", "x86_64") is None


# --- the bench table's words --------------------------------------------------------------------------

def _test(cv: float, conds: dict | None) -> tuple[dict, dict]:
    stats = {"cv": cv, "rate": {"mean": 100.0, "stddev": 100.0 * cv}}
    return {"conditions": conds}, stats


def test_noisy_says_why_when_pdx_knows_and_a_quiet_run_says_nothing():
    from pdx.reports.display import _noise

    busy = {"other_cpu_cores": 0.92, "steal_cores": 0.0}
    assert _noise(*_test(0.61, busy)) == "  ([yellow]noisy: cv 61%, other processes used 0.9 cores[/yellow])"
    assert _noise(*_test(0.01, busy)) == "  ([yellow]other processes used 0.9 cores[/yellow])"
    assert _noise(*_test(0.61, {"other_cpu_cores": 0.05})) == "  ([yellow]noisy: cv 61%[/yellow])"
    assert _noise(*_test(0.01, {"other_cpu_cores": 0.05, "power": {"source": "mains"}})) == ""
    assert _noise(*_test(0.01, None)) == ""  # imported and older runs have no conditions


def test_a_window_too_short_for_the_tick_counts_reads_no_cpu_use():
    """Ticks are 1/100 s: a 0.03 s window two ticks astray would read as 0.7 of a core. Such a window
    stores None, and the conditions line says why rather than nothing."""
    ticks = cpu.clock_ticks()
    start = conditions.Snapshot(100.0, {"busy": 1000, "steal": 0}, 50, None)

    def after(seconds, other_ticks, own_ticks):
        return conditions.Snapshot(100.0 + seconds, {"busy": 1000 + other_ticks + own_ticks, "steal": 0},
                                   50 + own_ticks, None)

    short = conditions.cpu_use(start, after(0.03, 2, 3))
    assert short["window_s"] == 0.03 and short["other_cpu_cores"] is None and short["own_cpu_cores"] is None
    assert conditions.notes(short) == []
    assert "CPU use not read: 0.03 s is too short a window" in condition_text(short)
    long = conditions.cpu_use(start, after(2.0, 2 * ticks, ticks))
    assert long["other_cpu_cores"] == 1.0 and long["own_cpu_cores"] == 0.5
    assert conditions.notes(long) == ["other processes used 1.0 cores"]
    assert "too short" not in condition_text(long)


# --- for real: a busy process beside a run ------------------------------------------------------------

def _detached_busy_loop() -> int:
    """A process that keeps a core busy and is not pdx's descendant (its parent exits at once,
    so it is re-parented), as another user's job would be. Returns its pid."""
    loop = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass"  # never outlives a test
    starter = ("import subprocess, sys; "
               f"p = subprocess.Popen([sys.executable, '-c', {loop!r}], start_new_session=True, "
               "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)")
    pid = int(subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True, check=True).stdout)
    time.sleep(0.3)  # let it reach its loop
    return pid


@pytest.fixture
def sleep_plugin(monkeypatch):
    """tests/sleep_backend.py registered through an entry point, as a plugin would be."""
    from pdx.base import plugin_manager

    from sleep_backend import register_as_plugin

    register_as_plugin(monkeypatch, "pdx_test_sleep_conditions")
    yield
    plugin_manager.reset()


def _bench(registry_url, model, *extra) -> tuple[dict, str]:
    from conftest import pdx_here

    import json

    run = json.loads(pdx_here("bench", "--backend", "sleep", "-m", str(model), "-p", "512", "-n", "0", "-r", "5",
                              "--hardware", "m2 max", "--registry", registry_url, "--json", *extra))[0]
    shown = pdx_here("show", run["id"], "--registry", registry_url)
    return run, shown


def test_a_run_beside_a_busy_process_says_so_and_stores_it(sleep_plugin, tiny_gguf, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    pid = _detached_busy_loop()
    try:
        run, shown = _bench(url, tiny_gguf)
    finally:
        os.kill(pid, signal.SIGKILL)
    (test,) = run["tests"]
    stored = test["conditions"]
    # The loop alone is a core's worth; on a crowded machine it gets less but others add more.
    assert stored["other_cpu_cores"] >= 0.5, stored
    assert stored["own_cpu_cores"] is not None and stored["window_s"] > 0.5
    assert f"other processes used {stored['other_cpu_cores']:.1f} cores" in shown
    assert "conditions" in shown and "pp512: other processes" in shown


def test_the_table_names_other_processes_exactly_when_the_stored_figure_is_high(sleep_plugin, tiny_gguf, tmp_path,
                                                                               monkeypatch):
    """A quiet machine cannot be ordered on a shared box: this run takes whatever load there is, and the
    table must speak exactly when the stored figure reaches the threshold (a quiet run says nothing)."""
    monkeypatch.setenv("COLUMNS", "1000")  # a busy machine's notes are long: each row on one line
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    run, shown = _bench(url, tiny_gguf, "--delay", "0.2", "-n", "16")
    pp, tg = run["tests"]
    assert pp["conditions"]["cooldown_s"] == 0 and tg["conditions"]["cooldown_s"] == 0.2
    for test in (pp, tg):
        named = (test["conditions"]["other_cpu_cores"] or 0) >= conditions.BUSY_CORES
        table_row = next(line for line in shown.splitlines() if f" {test['name']} " in line)
        assert ("other processes used" in table_row) == named, (table_row, test["conditions"])


@pytest.mark.llamacpp
def test_real_llama_cpp_beside_a_busy_process_says_so(tiny_gguf, tmp_path):
    """The same with llama.cpp, pdx in its own interpreter and the busy loop its sibling. llama.cpp gets one
    thread, so that it need not share the loop's core, and 200 repetitions of pp512, over two seconds on this
    machine's two cores (tick counts can be read over such a window; five of pp256, 0.03 s, could not)."""
    from conftest import run_pdx

    import json

    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    pid = _detached_busy_loop()
    try:
        bench = run_pdx("bench", "-m", str(tiny_gguf), "-p", "512", "-n", "0", "-r", "200", "-t", "1",
                        "--hardware", "m2 max",
                        "--registry", url, "--json")
    finally:
        os.kill(pid, signal.SIGKILL)
    assert bench.returncode == 0, bench.stderr
    (test,) = json.loads(bench.stdout)[0]["tests"]
    assert test["conditions"]["window_s"] >= conditions.MIN_CPU_WINDOW_S, test["conditions"]
    assert test["conditions"]["other_cpu_cores"] >= 0.5 and test["conditions"]["own_cpu_cores"] > 0
    shown = run_pdx("show", json.loads(bench.stdout)[0]["id"], "--registry", url).stdout
    assert f"other processes used {test['conditions']['other_cpu_cores']:.1f} cores" in shown
