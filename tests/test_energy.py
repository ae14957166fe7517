"""Energy per token (issue 31): the arithmetic against hand-worked figures, the power trace on a
replayed stepping counter, the run's measurement (idle, lengthening, meters that fail), and a
whole run through every reader with the example plugin's wall-plug meter over a simulated plug
(tests/energy_plug.py: this VM has no RAPL, no NVML and no plug). Zeus's own readers are driven
by replayed counters in tests/test_energy_zeus.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from importlib.metadata import EntryPoint, distribution
from pathlib import Path

import pytest

from pdx.domain import headline

from pdx.base import plugin_manager
from pdx.domain.energy import figures as energy_figures
from pdx.measure.energy import trace as trace_module
from pdx.contract.meter import Meter, MeterSource, MeterUnavailable, check_meter
from pdx.measure.energy.session import Metering, find
from pdx.measure.energy.trace import Trace
from pdx.contract.errors import PdxError

from conftest import pdx_here, run_pdx_here

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "example-plugin"
BUY_JS = Path(__file__).resolve().parents[1] / "reports" / "templates" / "buy.js"


# --- the arithmetic, worked by hand -----------------------------------------------------------------------

def _tg_test(**energy) -> dict:
    record = {"version": 1, "meters": [{"name": "gpu:0", "covers": "gpu "
                                        "board"}, {"name": "rapl:0", "covers": "cpu package"}],
              "joules": {"gpu:0": 192.0, "rapl:0": 38.4}, "timed_s": 0.96,
              "idle_watts": {"gpu:0": 60.0, "rapl:0": 20.0}, "price_kwh": 0.15, "currency": "USD",
              "price_said": "default"} | energy
    return {"name": "tg128", "kind": "tg", "samples": [{"n_prompt": 0, "n_gen": 128}] * 3, "energy": record}


def test_joules_per_token_watts_idle_net_and_cost_by_hand():
    e = energy_figures.energy_stats(_tg_test())
    # 192 + 38.4 = 230.4 J over 0.96 s: 240 W; 3 x 128 = 384 decode tokens: 0.6 J each, 1.667 tokens/J.
    assert e["phase"] == "decode" and e["tokens"] == 384
    assert e["joules"] == pytest.approx(230.4) and e["watts"] == pytest.approx(240.0)
    assert e["j_per_token"] == pytest.approx(0.6) and e["tokens_per_joule"] == pytest.approx(384 / 230.4)
    # idle 60 + 20 = 80 W: net 160 W, (230.4 - 80 x 0.96) / 384 = 0.4 J/token.
    assert e["idle_watts"] == 80.0 and e["net_watts"] == pytest.approx(160.0)
    assert e["net_j_per_token"] == pytest.approx(0.4)
    # 0.6 J x 1e6 tokens = 6e5 J = 1/6 kWh; at 0.15 USD/kWh, 0.025 USD per million tokens.
    assert e["cost_per_mtok"] == pytest.approx(0.025) and e["currency"] == "USD"
    assert e["covers"] == ["cpu package", "gpu board"]


def test_each_phase_divides_by_its_own_tokens():
    pp = {"kind": "pp", "samples": [{"n_prompt": 512, "n_gen": 0}] * 2}
    pg = {"kind": "pg", "samples": [{"n_prompt": 512, "n_gen": 128}]}
    serve = {"kind": "serve", "requests": [{"status": "ok", "n_gen": 32}, {"status": "ok", "n_gen": 30},
                                           {"status": "error", "n_gen": 7}]}
    assert energy_figures.phase_tokens(pp) == ("prefill", 1024)
    assert energy_figures.phase_tokens(pg) == ("prefill+decode", 640)
    assert energy_figures.phase_tokens(serve) == ("serving", 62)  # the failed request's tokens are not sold


def test_no_record_no_figures_and_no_idle_no_net():
    assert energy_figures.energy_stats({"kind": "tg", "samples": []}) is None
    assert energy_figures.energy_stats(_tg_test(joules={})) is None
    e = energy_figures.energy_stats(_tg_test(idle_watts=None))
    assert e["idle_watts"] is None and e["net_j_per_token"] is None and e["j_per_token"] == pytest.approx(0.6)


@pytest.mark.parametrize("text, "
                         "price", [("0.32", (0.32, "USD")), ("0.32 EUR", (0.32, "EUR")), ("0.32eur", (0.32, "EUR")),
                                         (".5", (0.5, "USD"))])
def test_a_price_reads_with_or_without_its_currency(text, price):
    assert energy_figures.parse_price(text) == price


@pytest.mark.parametrize("text", ["", "free", "-1", "0.3 euros", "1e3"])
def test_a_bad_price_is_refused(text):
    with pytest.raises(ValueError):
        energy_figures.parse_price(text)


def test_a_bad_price_on_the_command_line_is_one_line(tiny_gguf):
    result = run_pdx_here("bench", "-m", str(tiny_gguf), "--price-kwh", "cheap")
    assert result.returncode == 2 and "'cheap' is not a price per kWh" in result.stderr
    assert result.stderr.count("\n") <= 3  # click's usage line, the error


# --- the trace: a counter that steps, read by a clock the test sets --------------------------------------

class Clock:
    def __init__(self):
        self.ns = 1_000_000_000

    def __call__(self) -> int:
        return self.ns


def _stepping(clock: Clock, watts: float, step_s: float):
    """A replayed counter that moves only every ``step_s`` (as NVML's does), at ``watts``."""
    step_ns = round(step_s * 1e9)

    def read() -> float:
        return watts * (clock.ns // step_ns) * step_s
    return read


def test_a_window_is_read_between_the_readings_around_its_ends(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(trace_module.time, "monotonic_ns", clock)
    trace = Trace([Meter("m", "gpu board", "x", _stepping(clock, 100.0, 0.1))])
    for _ in range(31):  # 3 s read every 0.1 s
        trace.read_now()
        clock.ns += 100_000_000
    start = 1_000_000_000
    whole = trace.joules([(start, start + 2_000_000_000)])
    assert whole == {"m": pytest.approx(200.0)}  # 100 W for 2 s
    half = trace.joules([(start + 50_000_000, start + 1_050_000_000)])
    assert half["m"] == pytest.approx(100.0)  # interpolated inside the steps at both ends
    assert trace.joules([(start, start + 60_000_000_000)]) is None  # past the last reading
    assert trace.resolution_s() == pytest.approx(0.1)


def test_a_meter_that_raises_or_runs_backwards_stops_counting_and_says_why(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(trace_module.time, "monotonic_ns", clock)
    calls = {"n": 0}

    def flaky() -> float:
        calls["n"] += 1
        if calls["n"] > 3:
            raise OSError("device lost")
        return calls["n"] * 10.0

    values = iter([5.0, 6.0, 1.0, 9.0])
    trace = Trace([Meter("good", "gpu board", "x", _stepping(clock, 50.0, 0.01)),
                   Meter("flaky", "cpu package", "y", flaky),
                   Meter("wraps", "dram", "z", lambda: next(values))])
    for _ in range(4):
        trace.read_now()
        clock.ns += 100_000_000
    assert trace.failed == {"flaky": "OSError: device lost", "wraps": "its counter went from 6.0 to 1.0 J"}
    assert trace.joules([(1_000_000_000, 1_300_000_000)])["good"] == pytest.approx(15.0)


def test_a_short_test_gets_the_repetitions_its_meters_need(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(trace_module.time, "monotonic_ns", clock)
    metering = Metering([Meter("m", "gpu board", "x", _stepping(clock, 100.0, 0.1))])
    for _ in range(11):
        metering.trace.read_now()
        clock.ns += 100_000_000
    samples = [types.SimpleNamespace(ns=50_000_000, ended_ns=clock.ns)] * 3
    # A 0.1 s step wants a batch of 1 s of timed work; at 0.05 s a repetition, 20 (the first three,
    # 0.15 s, are too short to read on their own: a batch's edges each cost up to a step).
    assert metering.more(samples, [3]) == 30  # and half again, for a trace that slows on a busy machine
    assert metering.more(samples + [types.SimpleNamespace(ns=50_000_000, ended_ns=clock.ns)] * 20, [3, 20]) == 0
    assert metering.more([types.SimpleNamespace(ns=1_000_000_000, ended_ns=clock.ns)], [1]) == 0


# --- finding meters -----------------------------------------------------------------------------------------

def _source(name, *meters, error=None):
    def found():
        if error:
            raise error
        return list(meters)
    return MeterSource(name, found)


def test_find_says_why_each_source_found_nothing_and_a_plug_counts_alone():
    gpu = Meter("gpu:0", "gpu board", "G", lambda: 0.0)
    plug = Meter("plug", "machine", "the wall plug", lambda: 0.0)
    found = find([_source("gpu", gpu), _source("rapl", error=MeterUnavailable("no RAPL")),
                  _source("buggy", error=KeyError("x")), _source("plug", plug)])
    assert [m.name for m in found.meters] == ["plug"]
    assert found.missing == {"rapl": "no RAPL", "buggy": "failed: KeyError: 'x'",
                             "gpu:0": "counted by the machine's own meter"}
    alone = find([_source("gpu", gpu)])
    assert alone.meters == [gpu] and alone.missing == {}


def test_a_meter_must_say_what_it_covers():
    with pytest.raises(PdxError, match="covers 'the gpu'"):
        check_meter(Meter("m", "the gpu", "x", lambda: 0.0), "src")


# --- a whole run: the example plugin's plug meter, the sleep backend ---------------------------------------

@pytest.fixture
def plugged(monkeypatch, tmp_path):
    """The example plugin (its wall-plug meter) and tests/sleep_backend.py, found through entry points."""
    from sleep_backend import SleepBackend

    monkeypatch.syspath_prepend(str(EXAMPLE))
    module = types.ModuleType("pdx_test_sleep_energy")
    module.pdx_register_backends = lambda register: register(SleepBackend)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    sleepy = EntryPoint("sleepy", module.__name__, "pdx")
    vars(sleepy).update(dist=distribution("pdx"))
    real = plugin_manager.entry_points
    monkeypatch.setattr(plugin_manager, "entry_points", lambda group: list(real(group=group)) + [
        sleepy, EntryPoint("example", "pdx_example", "pdx")])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    plugin_manager.reset()
    yield tmp_path / "plug.joules"
    plugin_manager.reset()
    for name in [m for m in sys.modules if m.startswith("pdx_example")]:
        monkeypatch.delitem(sys.modules, name)


def _bench(url: str, model, *extra: str) -> dict:
    return json.loads(pdx_here("bench", "--backend", "sleep", "-m", str(model), "-p", "512", "-n", "16", "-r", "3",
                               "--hardware", "m2 max", "--registry", url, "--json", *extra))[0]


def test_a_run_with_a_meter_stores_energy_and_every_reader_shows_it(plugged, monkeypatch, tiny_gguf, tmp_path):
    from energy_plug import Plug

    monkeypatch.setenv("PDX_EXAMPLE_PLUG_FILE", str(plugged))
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    with Plug(plugged, idle_w=20.0, busy_w=80.0):
        assert "plug: machine of the wall plug" in pdx_here("hw", "--no-probe")
        run = _bench(url, tiny_gguf, "--price-kwh", "0.30 EUR")
    pp, tg = run["tests"]
    for test in (pp, tg):
        e = test["stats"]["energy"]
        rate = test["stats"]["rate"]["mean"]
        # 100 W while the "engine" works: J/token is 100 W over the measured rate; idle 20 W; net 80 W.
        assert e["idle_watts"] == pytest.approx(20.0, rel=0.15)
        assert e["j_per_token"] == pytest.approx(100.0 / rate, rel=0.2), (test["name"], e)
        assert e["net_j_per_token"] == pytest.approx(80.0 / rate, rel=0.25), (test["name"], e)
        assert e["cost_per_mtok"] == pytest.approx(e["j_per_token"] / 3.6 * 0.30)
        assert e["currency"] == "EUR" and e["price_said"] == "given" and e["covers"] == ["machine"]
        assert test["energy"]["meters"] == [{"name": "plug", "covers": "machine", "device": "the wall plug",
                                             "source": f"file {plugged}"}]
    assert pp["energy"]["lengthened"] == 0 and len(pp["samples"]) == 3  # 0.3 s: ten steps of the trace
    assert pp["energy"]["samples_read"] is None  # all three
    added = tg["energy"]["lengthened"]
    assert added > 0 and len(tg["samples"]) == 3 + added  # the first three were too short to read
    assert tg["energy"]["samples_read"] == list(range(3, 3 + added))

    shown = " ".join(pdx_here("show", run["id"], "--registry", url).split())  # as one line, however wrapped
    assert "J/token" in shown and "J per decode token" in shown and "repetitions added so the" in shown
    report = tmp_path / "report.html"
    pdx_here("report", run["id"], "--registry", url, "-o", str(report))
    page = report.read_text()
    assert "J/token" in page and f"{pp['stats']['energy']['j_per_token']:.3g}" in page
    # export -> import -> publish: the record travels whole, and the site's JSON has the figures.
    bundle = tmp_path / "run.pdx.json"
    pdx_here("export", run["id"], "--registry", url, "-o", str(bundle))
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    pdx_here("import", str(bundle), "--registry", other)
    again = json.loads(pdx_here("show", run["id"], "--registry", other, "--json"))
    assert [t["energy"] for t in again["tests"]] == [pp["energy"], tg["energy"]]
    pdx_here("publish", str(tmp_path / "site"), "--registry", other)
    site_run = json.loads((tmp_path / "site" / "runs" / f"{run['id']}.json").read_text())["run"]
    assert "J/token" in (tmp_path / "site" / "runs" / f"{run['id']}.html").read_text()
    assert site_run["tests"][1]["stats"]["energy"]["j_per_token"] == pytest.approx(tg["stats"]["energy"]["j_per_token"])
    # "What to buy" prices a request from the same figures: 512 prompt tokens at prefill's J/token, 16 at decode's.
    # Only a valid run is priced: where this machine's other work made the sleeps noisy, the page says it left
    # the run out (the one headline rule), and there is nothing to price.
    buy = json.loads((tmp_path / "site" / "buy.json").read_text())
    if headline.left_out(again) == headline.NOISY:
        assert "1 run left out: noisy" in json.dumps(buy)
        return
    (machine,) = buy["models"][0]["machines"]
    if shutil.which("node"):
        script = ("const {estimate} = require(process.argv[1]); const [m, w] = JSON.parse(process.argv[2]);"
                  "console.log(JSON.stringify(estimate(m, w)));")
        workload = {"prompt": 512, "output": 16, "depth": 0, "concurrency": 1}
        got = json.loads(subprocess.run(["node", "-e", script, str(BUY_JS), json.dumps([machine, workload])],
                                        capture_output=True, text=True, check=True).stdout)
        joules = 512 * pp["stats"]["energy"]["j_per_token"] + 16 * tg["stats"]["energy"]["j_per_token"]
        assert got["joules"] == pytest.approx(joules, rel=1e-9) and got["currency"] == "EUR"
        assert got["cost"] == pytest.approx(joules / 3.6e6 * 0.30, rel=1e-9)


def test_without_a_meter_a_run_stores_no_energy_and_pages_show_none(plugged, monkeypatch, tiny_gguf, tmp_path):
    monkeypatch.delenv("PDX_EXAMPLE_PLUG_FILE", raising=False)
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    assert "PDX_EXAMPLE_PLUG_FILE is not set" in pdx_here("hw", "--no-probe")
    run = _bench(url, tiny_gguf)
    assert all(t["energy"] is None and "energy" not in t["stats"] for t in run["tests"])
    assert len(run["tests"][1]["samples"]) == 3  # nothing lengthened
    assert "J/token" not in pdx_here("show", run["id"], "--registry", url)
    report = tmp_path / "report.html"
    pdx_here("report", run["id"], "--registry", url, "-o", str(report))
    assert "J/token" not in report.read_text()


def test_no_energy_leaves_the_meters_alone(plugged, monkeypatch, tiny_gguf, tmp_path):
    from energy_plug import Plug

    monkeypatch.setenv("PDX_EXAMPLE_PLUG_FILE", str(plugged))
    with Plug(plugged):
        run = _bench(f"sqlite:///{tmp_path / 'r.sqlite'}", tiny_gguf, "--no-energy")
    assert all(t["energy"] is None for t in run["tests"])


def test_a_meter_that_dies_mid_run_costs_its_figures_not_the_run(plugged, monkeypatch, tiny_gguf, tmp_path):
    """The plug's file goes away during the run: the run completes, its tests say nothing of energy."""
    from energy_plug import Plug

    monkeypatch.setenv("PDX_EXAMPLE_PLUG_FILE", str(plugged))
    import pdx.measure.energy.session as session

    started = session.Metering.start

    def start_then_unplug(self):
        started(self)
        plugged.unlink()

    monkeypatch.setattr(session.Metering, "start", start_then_unplug)
    with Plug(plugged) as plug:
        plug._write = lambda: None  # the exporter stops too
        run = _bench(f"sqlite:///{tmp_path / 'r.sqlite'}", tiny_gguf)
    assert run["status"] == "complete" and all(t["energy"] is None for t in run["tests"])


def test_a_backend_cannot_place_its_repetition_outside_the_call_that_measured_it():
    import time

    from pdx.contract.backend import Sample
    from pdx.measure.runner import check_sample
    from pdx.domain.workload import TestSpec

    test = TestSpec(0, 16)
    since = time.monotonic_ns()
    check_sample(test, Sample(ns=10, n_gen=16, ended_ns=time.monotonic_ns()), since)  # within: fine
    check_sample(test, Sample(ns=10, n_gen=16), since)  # None: the runner stamps it
    for wrong in (since - 1, time.monotonic_ns() + 10**12, float(since)):  # before, after, not a count of ns
        with pytest.raises(PdxError, match="outside the run\\(\\) call that measured it"):
            check_sample(test, Sample(ns=10, n_gen=16, ended_ns=wrong), since)


# --- real llama.cpp: are llama-bench's repetitions where pdx says they were? ---------------------------

class CpuTimeMeter:
    """A meter that charges 10 J per CPU-second of pdx's process tree (llama-bench included): a stand-in
    for RAPL, which this VM lacks, that is high exactly while the engine computes. A test double of the
    power, not of the engine."""

    JOULES_PER_CPU_S = 10.0

    def pdx_register_meters(self, register):
        import os

        from pdx.measure.conditions.cpu import clock_ticks, parse_pid_stat

        seen: dict[int, int] = {}  # every process of the tree ever read, at its most: an exited one keeps its time

        def read() -> float:
            parents, ticks = {}, {}
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    try:
                        parsed = parse_pid_stat((entry / "stat").read_text())
                    except OSError:
                        continue
                    if parsed:
                        parents[int(entry.name)], ticks[int(entry.name)] = parsed
            todo = [os.getpid()]
            while todo:
                pid = todo.pop()
                seen[pid] = max(seen.get(pid, 0), ticks.get(pid, 0))
                todo += [child for child, parent in parents.items() if parent == pid]
            return self.JOULES_PER_CPU_S * sum(seen.values()) / clock_ticks()

        register(MeterSource("cpu-time", lambda: [Meter("cpu-time", "cpu package", "pdx's process tree", read)]))


@pytest.mark.llamacpp
def test_llama_bench_repetitions_are_read_where_llama_cpp_computed(tiny_gguf, tmp_path):
    """llama-bench hands over its repetitions at once; pdx lays them back to back before its result line.
    If that were wrong, the windows would fall on model loading (one thread) or idle: the meter would read
    less over them than over the test's whole window."""
    plugin_manager.reset()
    plugin_manager.get_plugin_manager().register(CpuTimeMeter(), name="cpu-time")
    try:
        run = json.loads(pdx_here("bench", "--backend", "llamacpp-bench", "-m", str(tiny_gguf), "-p", "1024", "-n",
                                  "128",
                                  "-r", "100", "-t", "2", "--hardware", "m2 max",
                                  "--registry", f"sqlite:///{tmp_path / 'r.sqlite'}", "--json"))[0]
    finally:
        plugin_manager.reset()
    for test in run["tests"]:
        e = test["stats"]["energy"]
        # Over its whole window (model loads and the gaps between llama-bench calls included) pdx's tree used
        # own_cpu_cores; the timed windows, all compute, must read about that or more (on a busy machine both
        # fall). The kernel's CPU-time counters of a running process lag and catch up at its exit, so a window
        # can read more than the machine's cores (seen: 3.3 of 2) or a little less: the check is the floor,
        # loosely, which windows laid on model loading (one thread) or idle would miss by far.
        # 100 repetitions: each test's window a second or two here, long enough for tick counts to be read.
        average = CpuTimeMeter.JOULES_PER_CPU_S * test["conditions"]["own_cpu_cores"]
        assert e["watts"] >= 0.75 * average, (test["name"], e)
        assert e["watts"] > 3 * e["idle_watts"], e  # pdx waiting: its trace thread, little else


def test_the_bench_summary_line_says_how_many_repetitions_the_meters_needed(plugged, monkeypatch, tiny_gguf,
                                                                           tmp_path):
    """What `pdx bench` prints: the run's closing line names the tests pdx lengthened for the meters."""
    from energy_plug import Plug

    monkeypatch.setenv("PDX_EXAMPLE_PLUG_FILE", str(plugged))
    monkeypatch.setenv("COLUMNS", "400")
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    with Plug(plugged, idle_w=20.0, busy_w=80.0):
        shown = pdx_here("bench", "--backend", "sleep", "-m", str(tiny_gguf), "-p", "512", "-n", "16", "-r", "3",
                         "--hardware", "m2 max", "--registry", url)
    (summary,) = [line for line in shown.splitlines() if line.startswith("run ")]
    run_id = summary.split()[1]
    (tg,) = [t for t in json.loads(pdx_here("show", run_id, "--registry", url, "--json"))["tests"]
             if t["name"] == "tg16"]
    added = tg["energy"]["lengthened"]
    assert added > 0
    assert summary.endswith(f"; energy: {added} repetitions added to tg16 so the meters could read it"), summary
    assert "pp512" not in summary  # 0.3 s of pp512 needed no more


def test_the_summary_names_every_lengthened_test_as_the_h200_run_needed():
    """The H200 run (shared/recorded/h200/README.md): 174 repetitions added to pp512 and 10 to tg128."""
    from pdx.reports.figures import lengthened_text

    run = {"tests": [{"name": "pp512", "energy": {"lengthened": 174}}, {"name": "tg128", "energy": {"lengthened": 10}},
                     {"name": "tg128@d4096", "energy": {"lengthened": 0}}, {"name": "pp64", "energy": None}]}
    assert lengthened_text(run) == "energy: 174 repetitions added to pp512, 10 to tg128 so the meters could read them"
    assert lengthened_text({"tests": run["tests"][2:]}) == ""


def _notices(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith(("--energy", "--price-kwh"))]


def test_energy_and_a_price_with_no_meter_say_so_at_the_start(plugged, monkeypatch, tiny_gguf, tmp_path):
    """`pdx bench --energy --price-kwh` on a machine with no meter: a line each on stderr saying no energy is
    measured, why (the meter sources' reasons, as `pdx hw` gives them) and what to do."""
    monkeypatch.delenv("PDX_EXAMPLE_PLUG_FILE", raising=False)
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    args = ("bench", "--backend", "sleep", "-m", str(tiny_gguf), "-p", "64", "-n", "4", "-r", "2", "--registry", url)
    result = run_pdx_here(*args, "--energy", "--price-kwh", "0.30 EUR")
    assert result.returncode == 0, result.stderr
    energy, price = _notices(result)
    assert energy.startswith("--energy: no J/token in this run: this machine has no energy meter (")
    assert "PDX_EXAMPLE_PLUG_FILE is not set" in energy and "`pdx hw`" in energy
    assert price.startswith("--price-kwh 0.3 EUR: unused, no energy is measured to price (this machine has no")
    # --no-energy with a price: the price is said to be unused; neither flag: nothing said.
    (unused,) = _notices(run_pdx_here(*args, "--no-energy", "--price-kwh", "0.30"))
    assert unused.startswith("--price-kwh 0.3 USD: unused, no energy is measured to price (--no-energy was given)")
    assert _notices(run_pdx_here(*args)) == []


def test_a_meter_here_makes_no_notice(plugged, monkeypatch, tiny_gguf, tmp_path):
    from energy_plug import Plug

    monkeypatch.setenv("PDX_EXAMPLE_PLUG_FILE", str(plugged))
    with Plug(plugged):
        result = run_pdx_here("bench", "--backend", "sleep", "-m", str(tiny_gguf), "-p", "64", "-n", "4", "-r", "2",
                              "--energy", "--price-kwh", "0.30", "--registry", f"sqlite:///{tmp_path / 'r.sqlite'}")
    assert result.returncode == 0 and _notices(result) == [], result.stderr
