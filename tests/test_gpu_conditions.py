"""GPU conditions: each NVIDIA GPU's clocks, temperature, power and throttle reasons at a test's start and
end, read through NVML or nvidia-smi, stored with the CPU's conditions, shown by `pdx show` and the run
page, flagged when the GPU throttled. No NVIDIA GPU exists here: every test replays output recorded on a
real H200 (tests/data/h200: nvidia-smi -q, nvidia-smi --query-gpu, an NVML trace through pynvml)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from pdx.reports import figures
from pdx.measure.conditions import gpu, notes, nvidia_smi
from pdx.measure.conditions.gpu_figures import FIGURES, REASONS
from pdx.registry.bundle_schema import schema_errors

from conftest import pdx_here
from nvml_replay import H200, q_text, replayed_pynvml
from test_conditions import sleep_plugin  # noqa: F401  (the sleep backend, registered as a plugin)

IDLE_H200 = {"sm_mhz": 405.0, "max_sm_mhz": 1980.0, "memory_mhz": 3201.0, "max_memory_mhz": 3201.0,
             "power_w": 80.66, "power_limit_w": 700.0}


def test_the_recorded_nvidia_smi_q_reads_as_the_idle_h200():
    """nvidia-smi -q recorded on an idle H200 (no GPU here): its clocks, power and the one reason, idle."""
    (device,) = nvidia_smi.parse_q(q_text())
    assert device["index"] == 0 and device["reading"] == IDLE_H200 | {"celsius": None, "reasons": ["idle"]}


def test_the_recorded_query_csv_reads_with_its_units():
    """nvidia-smi --query-gpu --format=csv recorded on the H200 (no GPU here): header with units, values with
    units; a field it did not query reads None."""
    (device,) = nvidia_smi.parse_query((H200 / "nvidia-smi-query.csv").read_text())
    assert device["name"] == "NVIDIA H200" and device["reading"]["celsius"] == 35.0
    assert device["reading"]["sm_mhz"] == 405.0 and device["reading"]["max_sm_mhz"] == 1980.0
    assert device["reading"]["power_w"] is None and device["reading"]["reasons"] is None


def test_pdxs_own_query_without_header_or_units_reads_each_figure_and_the_reason_mask():
    """The line pdx's own query would print on the H200 (no GPU here), from the recorded figures."""
    line = "0, NVIDIA H200, 1980, 1980, 3201, 3201, 52, 392.41, 700.00, 0x0000000000000004"
    (device,) = nvidia_smi.parse_query(line)
    assert device["reading"] == {"sm_mhz": 1980.0, "max_sm_mhz": 1980.0, "memory_mhz": 3201.0,
                                 "max_memory_mhz": 3201.0, "celsius": 52.0, "power_w": 392.41,
                                 "power_limit_w": 700.0, "reasons": ["sw_power_cap"]}


def test_nvml_replayed_from_the_recorded_h200_gives_one_reading_per_gpu():
    """pynvml stood in by the recorded H200's answers (no GPU here): read goes through NVML, not nvidia-smi."""
    read = gpu.read(nv=replayed_pynvml(), smi=lambda *argv: pytest_fail(argv))
    (device,) = read["devices"]
    assert read["source"] == "nvml" and device["name"] == "NVIDIA H200"
    assert device["reading"]["power_w"] == 79.1 and device["reading"]["celsius"] == 35.0
    assert device["reading"]["reasons"] == ["idle"]


def pytest_fail(argv) -> None:
    raise AssertionError(f"nvidia-smi ran though NVML answered: {argv}")


def test_without_nvml_nvidia_smi_is_asked_and_without_either_nothing_is_read(monkeypatch):
    """A replayed nvidia-smi (no GPU here) when pynvml is absent; no GPU at all reads None."""
    monkeypatch.setattr(gpu, "_pynvml", lambda: None)
    line = "0, NVIDIA H200, 1980, 1980, 3201, 3201, 52, 392.41, 700.00, 0x0000000000000000"
    asked = []
    read = gpu.read(smi=lambda *argv: asked.append(argv) or line)
    assert read["source"] == "nvidia-smi" and read["devices"][0]["reading"]["power_w"] == 392.41
    assert asked[0][1] == f"--query-gpu={nvidia_smi.QUERY}"
    assert gpu.read(smi=lambda *argv: None) is None
    # a driver that knows the reasons only by their former name, or not at all (it fails the query)
    older = "index, name, clocks.current.sm [MHz], clocks_throttle_reasons.active\n0, NVIDIA H200, 1410 MHz, 0x4"
    read = gpu.read(smi=lambda tool, query, fmt: older if "throttle" in query else None)
    assert read["devices"][0]["reading"]["reasons"] == ["sw_power_cap"]
    assert gpu.window(None, None) is None and gpu.notes(None) == []


def _window(start_nv, end_nv) -> dict:
    return gpu.window(gpu.read(nv=start_nv), gpu.read(nv=end_nv))


def test_a_quiet_test_on_the_h200_says_nothing_against_it_and_shows_its_state():
    """Start idle and end at full clock, as the recorded H200 ran (no GPU here): no note, the figures shown."""
    window = _window(replayed_pynvml(), replayed_pynvml(q_text(idle=False), "load", sm_mhz=1980))
    assert gpu.notes(window) == [] and notes({"gpu": window}) == []
    text = figures.condition_text({"gpu": window})
    assert text.startswith("GPU 0 NVIDIA H200: SM clock 405 -> 1980 of 1980 MHz, memory clock 3201 of 3201 MHz")
    assert "35 °C" in text and "of 700 W" in text and "clocks held" not in text


def test_a_throttled_replay_is_flagged():
    """The recorded nvidia-smi -q with SW Power Cap and HW Power Brake Slowdown set Active (no GPU here)."""
    throttled = q_text("SW Power Cap", "HW Power Brake Slowdown", idle=False)
    window = _window(replayed_pynvml(), replayed_pynvml(throttled, "load", sm_mhz=1410))
    assert notes({"gpu": window}) == ["GPU 0 throttled: SW Power Cap, HW Power Brake Slowdown"]
    assert "clocks held by SW Power Cap, HW Power Brake Slowdown" in figures.condition_text({"gpu": window})
    # nvidia-smi -q's own reading flags the same
    (device,) = nvidia_smi.parse_q(throttled)
    assert gpu.notes({"devices": [{"index": 0, "start": None, "end": device["reading"]}]}) == [
        "GPU 0 throttled: SW Power Cap, HW Power Brake Slowdown"]


def test_a_gpu_that_ended_busy_far_below_its_clock_is_flagged_and_one_waiting_at_the_start_is_not():
    """The recorded H200 (no GPU here) ending a test at 900 of 1980 MHz with no reason given; its idle 405 MHz at
    the start is no note."""
    slow = _window(replayed_pynvml(), replayed_pynvml(q_text(idle=False), "load", sm_mhz=900))
    assert gpu.notes(slow) == ["GPU 0 SM clock 900 of 1980 MHz"]
    idle_end = _window(replayed_pynvml(), replayed_pynvml())
    assert gpu.notes(idle_end) == []


# --- the parsers take anything ------------------------------------------------------------------------------

@given(st.text())
def test_the_parsers_take_any_text_without_raising(text):
    for parse in (nvidia_smi.parse_query, nvidia_smi.parse_q):
        for device in parse(text):
            assert set(device["reading"]) == {f.key for f in FIGURES} | {"reasons"}


_value = st.one_of(st.none(), st.floats(0, 100_000, allow_nan=False).map(lambda x: round(x, 2)))


@given(st.lists(st.fixed_dictionaries({f.key: _value for f in FIGURES}), min_size=1, max_size=8),
       st.integers(0, 0x1FF), st.booleans())
def test_any_query_output_reads_back_as_written(readings, mask, units):
    """Rows as nvidia-smi prints them, with units and a header or bare, "[N/A]" for what a GPU lacks."""
    def cell(figure, value):
        if value is None:
            return "[N/A]"
        return f"{value:.2f} {figure.unit.replace('°C', '')}".strip() if units else f"{value:.2f}"
    lines = [", ".join([str(i), f"GPU {i}"] + [cell(f, r[f.key]) for f in FIGURES] + [f"0x{mask:016x}"])
             for i, r in enumerate(readings)]
    if units:
        lines.insert(0, ", ".join(["index", "name"] + [f"{f.query} [{f.unit}]" for f in FIGURES]
                                  + [nvidia_smi.REASONS_FIELD]))
    devices = nvidia_smi.parse_query("\n".join(lines))
    assert [d["index"] for d in devices] == list(range(len(readings)))
    for device, reading in zip(devices, readings):
        assert {k: v for k, v in device["reading"].items() if k != "reasons"} == reading
        assert device["reading"]["reasons"] == [r.key for r in REASONS if mask & r.bit]


@given(st.sets(st.sampled_from(REASONS)), st.integers(0, 5000))
def test_any_reasons_set_active_in_nvidia_smi_q_read_as_set(active, sm):
    text = q_text(*(r.words for r in active), idle="Idle" in {r.words for r in active})
    text = text.replace("SM                                             : 405 MHz",
                        f"SM                                             : {sm} MHz")
    (device,) = nvidia_smi.parse_q(text)
    assert set(device["reading"]["reasons"]) == {r.key for r in active}
    assert device["reading"]["sm_mhz"] == sm


# --- stored, shown, on the run page, in the bundle schema ------------------------------------------------------

def test_a_run_on_a_replayed_h200_stores_shows_and_validates_its_gpu_conditions(sleep_plugin, tiny_gguf,  # noqa: F811
                                                                                 tmp_path, monkeypatch):
    """pdx bench (the sleep backend) with pynvml stood in by the recorded H200, throttled by its power cap
    (no GPU here): each test stores the GPU at its start and end, `pdx show` prints them and flags the
    throttle in the table, the run page shows them, `pdx show --json` validates against the bundle schema."""
    throttled = replayed_pynvml(q_text("SW Power Cap", idle=False), "load", sm_mhz=1410)
    monkeypatch.setattr(gpu, "_pynvml", lambda: throttled)
    monkeypatch.setenv("COLUMNS", "400")
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    run = json.loads(pdx_here("bench", "--backend", "sleep", "-m", str(tiny_gguf), "-p", "64", "-n", "0", "-r", "2",
                              "--registry", url, "--json"))[0]
    (test,) = run["tests"]
    (device,) = test["conditions"]["gpu"]["devices"]
    assert device["name"] == "NVIDIA H200" and device["start"]["reasons"] == ["sw_power_cap"]
    assert device["end"]["sm_mhz"] == 1410 and device["end"]["power_limit_w"] == 700
    shown = pdx_here("show", run["id"], "--registry", url)
    row = next(line for line in shown.splitlines() if " pp64 " in line)
    assert "GPU 0 throttled: SW Power Cap" in row
    assert "pp64: " in shown and "GPU 0 NVIDIA H200: SM clock 1410 of 1980 MHz" in shown
    record = json.loads(pdx_here("show", run["id"], "--registry", url, "--json"))
    assert record["tests"][0]["conditions"]["gpu"] == test["conditions"]["gpu"]
    from pdx.registry.bundle import make_bundle
    from pdx.registry import Registry
    assert schema_errors(make_bundle(Registry(url).records([run["id"]]))) is None
    assert schema_errors({"version": 1, "gpu": {"source": "nvml", "devices": [{"index": 0, "name": "x",
                          "start": {"sm_mhz": -1}}]}}, "conditions") is not None
    bundle, other = tmp_path / "runs.pdx.json", f"sqlite:///{tmp_path / 'other.sqlite'}"
    pdx_here("export", run["id"], "-o", str(bundle), "--registry", url)
    pdx_here("import", str(bundle), "--registry", other)
    imported = json.loads(pdx_here("show", run["id"], "--registry", other, "--json"))
    assert imported["tests"][0]["conditions"]["gpu"] == test["conditions"]["gpu"]
    page = tmp_path / "run.html"
    pdx_here("report", run["id"], "-o", str(page), "--registry", url)
    html = page.read_text()
    assert "GPU 0 NVIDIA H200: SM clock 1410 of 1980 MHz" in html and "clocks held by SW Power Cap" in html
