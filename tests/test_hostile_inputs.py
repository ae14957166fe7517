"""Hostile files and arguments (issue 27): forged or impossible figures are refused by the one record
check (every writer) and by ``pdx hub verify``; bytes that used to crash pdx are one-line errors; a
UTF-8 byte-order mark is no reason to refuse a file. Each case writes the hostile input itself, runs
the real CLI, and checks that nothing was stored."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

import runfactory
from conftest import assert_one_line_error, pdx_here, run_pdx, run_pdx_here
from pdx.registry.hub_folder import file_name
from pdx.registry import Registry, bundle
from pdx.registry.redact import redact_record
from pdx.registry.plausibility import ABSOLUTE_RATE, HEADROOM, bounds, fastest

DATA = Path(__file__).parent / "data"
LLAMA_BENCH = json.loads((DATA / "llama_bench_tiny.json").read_text())[0]  # a pp16 record of the real tool


def _write(tmp_path: Path, name: str, text: str, bom: bool = False) -> Path:
    path = tmp_path / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass"))
    return path


def _runs(url: str) -> list:
    return json.loads(pdx_here("runs", "--registry", url, "--json"))


def _refused(url: str, path: Path, *needles: str, env_args=()) -> str:
    line = assert_one_line_error(run_pdx_here("import", str(path), "--registry", url, *env_args), *needles)
    assert _runs(url) == []
    return line


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'hostile.sqlite'}"


# -- forged or impossible figures ------------------------------------------------------------------------------

def test_samples_of_one_nanosecond_are_refused(url, tmp_path):
    forged = [LLAMA_BENCH | {"samples_ns": [1, 1, 1], "avg_ns": 1, "samples_ts": [1.6e10] * 3, "avg_ts": 1.6e10}]
    line = _refused(url, _write(tmp_path, "fast.json", json.dumps(forged)), "tests[0].samples[0]",
                    "faster than any benchmark of any model")
    assert f"{ABSOLUTE_RATE:.0e}" in line


@pytest.mark.parametrize("when, needle", [("0001-01-01T00:00:00Z", "before 2023-01-01"),
                                          ("2022-12-31T23:59:59Z", "before 2023-01-01"),
                                          ("9999-12-31T23:59:59Z", "in the future")])
def test_dates_no_measurement_has_are_refused(url, tmp_path, when, needle):
    _refused(url, _write(tmp_path, "dated.json", json.dumps([LLAMA_BENCH | {"test_time": when}])), needle)


def test_a_key_named_twice_is_refused_in_every_json_reader(url, tmp_path):
    text = json.dumps([LLAMA_BENCH])
    twice = text.replace('"n_prompt": 16', '"n_prompt": 16, "n_prompt": 4096')
    assert twice != text
    _refused(url, _write(tmp_path, "twice.json", twice), "names 'n_prompt' twice")
    _refused(url, _write(tmp_path, "twice.jsonl", twice[1:-1]), "line 1 names 'n_prompt' twice")
    # A bundle: the digest matches the reading that keeps the first value; another reader keeps the second.
    document = bundle.make_bundle(_records(tmp_path))
    sample = document["runs"][0]["record"]["tests"][0]["samples"][0]
    text = json.dumps(document).replace(f'"ns": {sample["ns"]}', f'"ns": {sample["ns"]}, "ns": 1', 1)
    forged = _write(tmp_path, "twice.pdx.json", text)
    _refused(url, forged, "names 'ns' twice")
    folder = tmp_path / "hub"
    folder.mkdir()
    shutil.copy(forged, folder / "twice.pdx.json")
    result = run_pdx_here("hub", "verify", str(folder))
    assert result.returncode == 1 and "names 'ns' twice" in result.stdout, result.stdout


def _records(tmp_path: Path) -> list[dict]:
    from pdx.registry.importers import read_file

    return read_file(_write(tmp_path, "good.json", json.dumps([LLAMA_BENCH])))[1]


@pytest.mark.parametrize("version", ["2.0", "10.1", 2, "v2"])
def test_an_aiperf_export_of_an_unknown_schema_is_refused(url, tmp_path, version):
    document = json.loads((DATA / "aiperf_profile_export.json").read_text()) | {"schema_version": version}
    path = _write(tmp_path, "profile_export_aiperf.json", json.dumps(document))
    _refused(url, path, "newer than pdx reads (1.x)" if version != "v2" else "no AIPerf schema version pdx knows")


def test_an_aiperf_export_of_a_later_minor_schema_is_read(url, tmp_path):
    document = json.loads((DATA / "aiperf_profile_export.json").read_text()) | {"schema_version": "1.9"}
    assert pdx_here("import", str(_write(tmp_path, "export.json", json.dumps(document))), "--registry", url)
    assert len(_runs(url)) == 1


@pytest.mark.parametrize("version", [3, 3.0, "3", 99, 10**400])
def test_a_bundle_of_a_later_schema_is_refused_in_one_line(url, tmp_path, version):
    document = bundle.make_bundle(_records(tmp_path)) | {"schema_version": version}
    _refused(url, _write(tmp_path, "later.pdx.json", json.dumps(document)),
             f"is newer than this pdx reads ({bundle.SCHEMA_VERSION})", "upgrade pdx")


@pytest.mark.parametrize("metrics", [None, {}])
def test_a_guidellm_benchmark_without_metrics_is_refused(url, tmp_path, metrics):
    report = json.loads((DATA / "guidellm_concurrent.json").read_text())
    report["benchmarks"][0]["metrics"] = metrics
    _refused(url, _write(tmp_path, "report.json", json.dumps(report)), "benchmark 0 has no metrics")


def test_a_guidellm_benchmark_with_neither_requests_nor_figures_is_refused(url, tmp_path):
    report = json.loads((DATA / "guidellm_concurrent.json").read_text())
    benchmark = report["benchmarks"][0]
    benchmark["requests"] = {}
    benchmark["metrics"] = {"request_totals": benchmark["metrics"]["request_totals"]}
    _refused(url, _write(tmp_path, "report.json", json.dumps(report)), "neither request records nor")


def _hub_run(tmp_path: Path) -> dict:
    """An honest run of a 70B model on a CPU the catalog does not know, so no ceiling is stored."""
    registry = Registry(f"sqlite:///{tmp_path / 'contributor.sqlite'}")
    run_id = runfactory.add_run(registry, runfactory.hardware("AMD EPYC 9654", 0),
                                runfactory.model("llama-70b", 0, n_params=70_000_000_000), "llamacpp-bench",
                                runfactory.START, random.Random(0), tests=runfactory.TESTS[:2], repetitions=3)
    (record,) = registry.records([run_id])
    registry.close()
    assert all(test["ceilings"] is None for test in record["tests"])
    return redact_record(record)  # as `pdx submit` writes it: a results folder takes redacted runs only


def test_a_run_made_100x_faster_and_resigned_fails_verify_and_import_without_a_ceiling(url, tmp_path):
    record = _hub_run(tmp_path)
    folder = tmp_path / "results"
    folder.mkdir()
    honest = folder / file_name(record)
    honest.write_text(json.dumps(bundle.make_bundle([record])))
    assert run_pdx_here("hub", "verify", str(folder)).returncode == 0
    for test in record["tests"]:
        for sample in test["samples"]:
            sample["ns"] //= 100
    honest.unlink()
    forged = folder / file_name(record)  # re-signed and renamed: the digest and the name both agree
    forged.write_text(json.dumps(bundle.make_bundle([record])))
    result = run_pdx_here("hub", "verify", str(folder))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stdout.splitlines()[:1]
    assert line.startswith(f"{forged.name}: run {record['id'][:12]}: tests[0].samples[0]: ") and \
        "faster than the fastest chip pdx knows could compute this model" in line, line
    _refused(url, forged, "faster than the fastest chip pdx knows")
    # The decode test alone: 100x of its honest 60 t/s is past what the fastest memory could feed.
    record["tests"] = record["tests"][1:]
    _refused(url, _write(tmp_path, "decode.pdx.json", json.dumps(bundle.make_bundle([record]))),
             "tests[0].samples[0]", "t/s of decode is faster than the fastest chip pdx knows could read this model")


def test_the_bounds_are_the_catalog_s_fastest_chip_running_the_model():
    bandwidth, flops = fastest()
    dense = {"n_params": 70_000_000_000, "file_bytes": 42_500_000_000, "architecture": "llama", "name": "llama 70B",
             "extra": {}}
    limits = bounds(dense, {"gpus": []})
    assert limits.decode == pytest.approx(HEADROOM * bandwidth / 42.5e9)
    assert limits.compute == pytest.approx(HEADROOM * flops / (2 * 70e9))
    assert bounds(dense, {"gpus": [{}] * 8}).decode == pytest.approx(8 * limits.decode)  # tensor parallel
    # A mixture-of-experts reads the experts a token routes to: its stated share, else 1/64.
    moe = dense | {"extra": {"experts": {"active_params": 5_000_000_000, "total_params": 70_000_000_000}}}
    assert bounds(moe, {}).decode == pytest.approx(limits.decode * 14)
    named = dense | {"name": "gpt-oss 120B MXFP4 MoE", "extra": {"model_type": "gpt-oss 120B MXFP4 MoE"}}
    assert bounds(named, {}).decode == pytest.approx(limits.decode * 64)
    assert bounds({"n_params": 0, "file_bytes": 0, "extra": {}}, {}).decode is None  # size unknown: the cap only


# -- bytes that crash ----------------------------------------------------------------------------------------

def test_a_lone_surrogate_in_a_file_is_one_line(url, tmp_path):
    text = json.dumps([LLAMA_BENCH]).replace('"llama ?B F16"', '"llama \\ud800 F16"')
    _refused(url, _write(tmp_path, "surrogate.json", text), "holds a lone UTF-16 surrogate")
    document = json.dumps(bundle.make_bundle(_records(tmp_path)))
    document = document.replace('"tags": []', '"tags": ["\\udcff"]', 1)
    _refused(url, _write(tmp_path, "surrogate.pdx.json", document), "tags[0]: holds a lone UTF-16 surrogate")


def test_a_lone_surrogate_in_a_tag_is_one_line(url):
    # What Python makes of an argument the OS could not decode as UTF-8 (b"\xff"): a lone surrogate.
    result = run_pdx_here("import", str(DATA / "llama_bench_tiny.json"), "--registry", url, "--tag", "a\udcff")
    assert_one_line_error(result, "--tag", "is not UTF-8 text")
    assert _runs(url) == []


def test_an_import_limit_that_is_no_number_is_one_line(url, monkeypatch):
    for value in ("nan", "inf", "-5", "1e9"):
        monkeypatch.setenv("PDX_IMPORT_MAX_BYTES", value)
        _refused(url, DATA / "llama_bench_tiny.json", "PDX_IMPORT_MAX_BYTES")


@pytest.mark.parametrize("flag", ["--input-dist", "--output-dist"])
@pytest.mark.parametrize("dist", ["lognormal:inf", "lognormal:nan", "lognormal:1e400", "uniform:inf", "lognormal:50"])
def test_a_length_distribution_that_is_no_number_is_refused_before_any_run(url, flag, dist):
    result = run_pdx_here("serve-bench", "--backend", "openai", "--url", "http://127.0.0.1:1", "-c", "1",
                          "--num-requests", "2", flag, dist, "--registry", url)
    assert_one_line_error(result, f"{flag} {dist}: cannot read it")
    assert _runs(url) == []


# -- a byte-order mark is valid input ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["llama_bench_tiny.json", "llama_bench_tiny.jsonl", "llama_bench_tiny.md",
                                  "llama_bench_tiny.sql", "bundle"])
def test_a_utf8_byte_order_mark_is_read_as_the_file_without_it(url, tmp_path, name):
    if name == "bundle":
        text = json.dumps(bundle.make_bundle(_records(tmp_path)))
    else:
        text = (DATA / name).read_text()
    plain = _write(tmp_path, f"plain-{name}", text)
    marked = _write(tmp_path, f"marked-{name}", text, bom=True)
    assert marked.read_bytes()[:3] == b"\xef\xbb\xbf"
    added = json.loads(pdx_here("import", str(marked), "--registry", url, "--json"))["added"]
    assert added
    again = json.loads(pdx_here("import", str(plain), "--registry", url, "--json"))
    if name in ("bundle", "llama_bench_tiny.json", "llama_bench_tiny.jsonl", "llama_bench_tiny.sql"):
        assert again["added"] == [] and set(again["skipped"]) == set(added)  # the same runs, byte for byte


# -- terminal escapes ------------------------------------------------------------------------------------------

ESCAPES = "\x1b]0;pwned\x07 \x1b[2J \u202eevil \x9b31m"


def test_control_sequences_in_a_bundle_print_as_escapes_never_raw(url, tmp_path):
    """A tag, a model name and a path that carry terminal control sequences: `pdx runs`, `pdx show` and
    `pdx compare` print each control character as its escape (one sanitiser, the display's console)."""
    record = _hub_run(tmp_path)
    record["model"]["name"] = f"model {ESCAPES}"
    record["model"]["path"] = f"/models/[bold]{ESCAPES}.gguf"  # rich markup in a path is text too
    record["tags"] = [f"tag {ESCAPES}"]
    path = _write(tmp_path, "escapes.pdx.json", json.dumps(bundle.make_bundle([record])))
    assert run_pdx_here("import", str(path), "--registry", url).returncode == 0
    run_id = record["id"]
    outputs = [run_pdx(*args, "--registry", url, env={"COLUMNS": "300"})
               for args in (("runs",), ("show", run_id), ("compare", run_id, run_id))]
    for result in outputs:
        assert result.returncode == 0, result.stderr
        text = result.stdout + result.stderr
        assert not any(c in text for c in "\x1b\x07\x9b\u202e"), (result.args, text)
    shown = outputs[1].stdout
    assert "model \\x1b]0;pwned\\x07 \\x1b[2J \\u202eevil \\x9b31m" in shown  # visible, and inert
    assert "/models/[bold]\\x1b]0;pwned" in shown
    assert "tag \\x1b]0;pwned\\x07" in outputs[0].stdout


def _energy(**change) -> dict:
    """An H200 board's energy over a 2 s window (700 W): what pdx's NVML meter stores."""
    return {"version": 1, "meters": [{"name": "gpu0", "covers": "gpu board"}], "joules": {"gpu0": 1400.0},
            "timed_s": 2.0, "idle_watts": {"gpu0": 75.0}} | change


IMPOSSIBLE = {
    "500 accepted of 170 drafted": (
        lambda t: t["samples"][0]["engine"].update(speculation={"drafted": 170, "accepted": 500, "tokens": 600}),
        "tests[0].samples[0].engine.speculation: accepted 500 is more than drafted 170"),
    "-5 drafted": (
        lambda t: t["samples"][0]["engine"].update(speculation={"drafted": -5, "accepted": 0, "tokens": 64}),
        "drafted -5 is not a whole number"),
    "fractional accepted": (
        lambda t: t["samples"][0]["engine"].update(speculation={"drafted": 10, "accepted": 2.5, "tokens": 64}),
        "accepted 2.5 is not a whole number"),
    "1e300 J": (lambda t: t.update(energy=_energy(joules={"gpu0": 1e300})), "more than a gpu board can draw"),
    "1e-300 J": (lambda t: t.update(energy=_energy(joules={"gpu0": 1e-300})), "below any meter's step"),
    "meters a, joules b": (lambda t: t.update(energy=_energy(meters=[{"name": "a", "covers": "gpu board"}],
                                                               joules={"b": 10.0}, idle_watts=None)),
                           "names meter 'b', which the meters list does not ('a')"),
    "energy version 99": (lambda t: t.update(energy=_energy(version=99)),
                          "energy.version: 99 is no energy record version this pdx knows"),
    "idle above a board": (lambda t: t.update(energy=_energy(idle_watts={"gpu0": 1e6})), "W idle is more than"),
}


def _verified_folder(tmp_path, record: dict):
    """A results folder holding ``record`` alone, named by its content, that `pdx hub verify` passes."""
    folder = tmp_path / "results"
    folder.mkdir()
    path = folder / file_name(record)
    path.write_text(json.dumps(bundle.make_bundle([record])))
    assert run_pdx_here("hub", "verify", str(folder)).returncode == 0
    return folder, path


def _forged_is_refused(url, tmp_path, record, change, needle):
    """``record`` passes verify; changed by ``change`` and re-signed under its new content id, `pdx hub
    verify` names ``needle`` in one line and `pdx import` refuses the file in one line."""
    folder, honest = _verified_folder(tmp_path, record)
    honest.unlink()
    change(record["tests"][0])
    forged = folder / file_name(record)
    forged.write_text(json.dumps(bundle.make_bundle([record])))
    result = run_pdx_here("hub", "verify", str(folder))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{forged.name}: run {record['id'][:12]}: ") and needle in line, line
    _refused(url, forged, needle)


@pytest.mark.parametrize("case", IMPOSSIBLE)
def test_an_impossible_speculation_or_energy_figure_is_refused_by_import_and_verify(url, tmp_path, case):
    """Each impossible figure of the issue, re-signed and named by its content: `pdx hub verify` names it
    in one line, `pdx import` refuses the file in one line, and an honest energy record passes both."""
    change, needle = IMPOSSIBLE[case]
    record = _hub_run(tmp_path)
    record["tests"][0]["energy"] = _energy()
    _forged_is_refused(url, tmp_path, record, change, needle)


# The GPU as the recorded H200's nvidia-smi -q read it (tests/data/h200), under load at its power limit.
_H200 = {"sm_mhz": 1410.0, "max_sm_mhz": 1980.0, "memory_mhz": 3201.0, "max_memory_mhz": 3201.0, "celsius": 71.0,
         "power_w": 699.2, "power_limit_w": 700.0, "reasons": ["sw_power_cap"]}


def _conditions() -> dict:
    return {"version": 1, "window_s": 2.0, "cpu_count": 8, "other_cpu_cores": 1.27, "own_cpu_cores": 0.98,
            "steal_cores": 0.0, "frequency": {"source": "cpuinfo", "mhz": 2400.0, "max_mhz": 3500.0},
            "thermal": {"source": "thermal_zone", "zones": [{"zone": "x86_pkg_temp", "celsius": 64.0}],
                        "max_celsius": 64.0}, "power": {"source": "battery", "battery_percent": 80.0},
            "gpu": {"source": "nvml", "devices": [{"index": 0, "name": "NVIDIA H200", "start": dict(_H200),
                                                   "end": dict(_H200)}]}}


def _clients(n: int = 2) -> list[dict]:
    """What `serve-bench --clients 2` stores per sample (pdx.measure.serving.shards)."""
    return [{"shard": k, "pool": "local", "pid": 100 + k, "offset_ns": [0, 0], "offset_uncertainty_ns": 20_000,
             "requests": 8, "cpu_s": 0.4, "cores": 0.2, "late_p99_ms": 0.3, "saturation": None, "died": None}
            for k in range(n)]


def _gpu_end(test: dict) -> dict:
    return test["conditions"]["gpu"]["devices"][0]["end"]


IMPOSSIBLE_CONDITIONS = {
    "16 cores of 8 CPUs": (lambda t: t["conditions"].update(other_cpu_cores=16.0), "is not cores of the machine's 8"),
    "a million CPUs": (lambda t: t["conditions"].update(cpu_count=10**6), "is not a machine's number of CPUs"),
    "a 90 GHz CPU": (lambda t: t["conditions"]["frequency"].update(mhz=90_000.0), "is not a CPU clock in MHz"),
    "a zone at 5000 C": (lambda t: t["conditions"]["thermal"]["zones"][0].update(celsius=5000.0),
                         "conditions.thermal.zones[0].celsius: 5000.0 is not a temperature"),
    "below absolute zero": (lambda t: t["conditions"]["thermal"].update(max_celsius=-300.0), "is not a temperature"),
    "a GPU at 1e9 MHz": (lambda t: _gpu_end(t).update(sm_mhz=1e9), "devices[0].end.sm_mhz: 1000000000.0 is not a GPU"),
    "a 1 MW board": (lambda t: _gpu_end(t).update(power_w=1e6), "is not a GPU board's power in W"),
    "a battery at "
                         "250%": (lambda t: t["conditions"]["power"].update(battery_percent=250.0), "is not a "
                                  "battery's charge"),
    "300 clients": (lambda t: t["samples"][0]["engine"].update(clients=_clients(300)), "300 client records"),
    "two shards 0": (lambda t: t["samples"][0]["engine"].update(clients=[_clients()[0]] * 2),
                     "numbers its clients [0, 0]"),
    "-3 requests": (lambda t: t["samples"][0]["engine"]["clients"][1].update(requests=-3),
                    "clients[1].requests: -3 is not a whole number of requests"),
    "a client of 1e6 cores": (lambda t: t["samples"][0]["engine"]["clients"][0].update(cores=1e6),
                              "is not a client process's CPU in cores"),
}


@pytest.mark.parametrize("case", IMPOSSIBLE_CONDITIONS)
def test_impossible_conditions_and_clients_are_refused_by_import_and_verify(url, tmp_path, case):
    """Conditions and client records go through the one record check too: each impossible figure, re-signed
    and named by its content, is named by `pdx hub verify` and refused by `pdx import` in one line; the
    honest conditions (a recorded H200's readings) and two clients pass both."""
    change, needle = IMPOSSIBLE_CONDITIONS[case]
    record = _hub_run(tmp_path)
    record["tests"][0]["conditions"] = _conditions()
    record["tests"][0]["samples"][0]["engine"]["clients"] = _clients()
    _forged_is_refused(url, tmp_path, record, change, needle)


HARDWARE = {
    "cpu {}": lambda h: h.update(cpu={}),
    "no cpu": lambda h: h.pop("cpu"),
    "a GPU of {}": lambda h: h.update(gpus=[{}]),
    "no gpus": lambda h: h.pop("gpus"),
}


@pytest.mark.parametrize("case", HARDWARE)
def test_a_machine_verify_accepts_publishes_without_a_traceback(tmp_path, case):
    """`hardware.cpu: {}` on an identified run passed verify, then publish --bundles raised jinja2's
    UndefinedError in group.html: what verify accepts, publish renders (the machine's page says '?')."""
    record = _hub_run(tmp_path)
    HARDWARE[case](record["hardware"])
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / file_name(record)).write_text(json.dumps(bundle.make_bundle([record])))
    assert run_pdx_here("hub", "verify", str(folder)).returncode == 0
    published = run_pdx_here("publish", str(tmp_path / "site"), "--bundles", str(folder), "--no-cache")
    assert published.returncode == 0 and "Traceback" not in published.stderr, published.stderr
    (page,) = (tmp_path / "site" / "hardware").glob("*.html")
    assert "AMD EPYC 9654" in page.read_text()


def test_a_machine_s_figures_of_the_wrong_type_are_refused_by_verify_naming_the_field(tmp_path):
    record = _hub_run(tmp_path)
    record["hardware"]["cpu"]["memory_bytes"] = "lots"
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / file_name(record)).write_text(json.dumps(bundle.make_bundle([record])))
    result = run_pdx_here("hub", "verify", str(folder))
    assert result.returncode == 1 and "hardware.cpu.memory_bytes: 'lots' is not of type" in result.stdout
    assert_one_line_error(run_pdx_here("publish", str(tmp_path / "site"), "--bundles", str(folder)),
                          "hardware.cpu.memory_bytes")


@pytest.mark.parametrize("args, needle", [
    (("runs", "--model", "a%" * 50_000), "100000 characters is over the limit of 256"),
    (("runs", "--tag", "a\udcff"), "is not UTF-8 text"),
    (("runs", "--tag", ""), "--tag': is empty"),
    (("import", str(DATA / "llama_bench_tiny.json"), "--tag", " "), "--tag': is empty"),
    (("bench", "--price-kwh", "9" * 400), "per kWh is over 1e+06"),
    (("serve-bench", "--ray", ""), "--ray': is empty"),
])
def test_filters_labels_and_prices_out_of_range_are_one_line_errors(url, args, needle):
    """Each was a traceback (SQLite's "LIKE pattern too complex", a surrogate the driver could not
    encode), an empty tag stored, or a price of inf; now one line, nothing stored, nothing run."""
    line = assert_one_line_error(run_pdx_here(*args, "--registry", url), needle)
    assert len(line) < 300  # the 100,000 characters are not echoed back
    assert _runs(url) == []


def test_a_guidellm_benchmark_whose_requests_is_a_string_is_refused(url, tmp_path):
    report = json.loads((DATA / "guidellm_concurrent.json").read_text())
    report["benchmarks"][0]["requests"] = "all of them"
    _refused(url, _write(tmp_path, "report.json", json.dumps(report)), "benchmark 0 requests is 'all of them'")
    report["benchmarks"][0]["requests"] = {"successful": "one"}
    _refused(url, _write(tmp_path, "report.json", json.dumps(report)), "requests.successful is 'one'")


def test_hub_verify_prints_a_file_s_name_with_its_control_characters_escaped(tmp_path):
    record = _hub_run(tmp_path)
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / ("x\x1b]0;pwned\x07" + file_name(record))).write_text(json.dumps(bundle.make_bundle([record])))
    result = run_pdx_here("hub", "verify", str(folder))
    assert result.returncode == 1 and "\x1b" not in result.stdout + result.stderr
    assert "x\\x1b]0;pwned\\x07" in result.stdout


def test_a_run_s_energy_rewritten_in_place_changes_its_content_id_and_fails_verify(tmp_path):
    """The content id a results folder names a file by covers energy (and conditions): an edit that keeps
    the file's name and re-signs its digest is named by verify; a file named by the older id, which left
    energy out, is told the name to move it to."""
    record = _hub_run(tmp_path)
    record["tests"][0]["energy"] = _energy()
    folder, path = _verified_folder(tmp_path, record)
    record["tests"][0]["energy"]["joules"]["gpu0"] = 700.0  # half the energy, same name, digest re-signed
    assert file_name(record) != path.name and file_name(record, 1) == file_name(json.loads(
        path.read_text())["runs"][0]["record"], 1)  # what the older id could not see
    path.write_text(json.dumps(bundle.make_bundle([record])))
    result = run_pdx_here("hub", "verify", str(folder))
    assert result.returncode == 1 and f"named {path.name} but its run's content id makes it" in result.stdout
    path.unlink()
    older = folder / file_name(record, 1)
    older.write_text(json.dumps(bundle.make_bundle([record])))
    result = run_pdx_here("hub", "verify", str(folder))
    assert result.returncode == 1 and "content id of version 1" in result.stdout
    assert f"rename it {file_name(record)}" in result.stdout


def test_a_fifo_named_like_a_bundle_blocks_neither_verify_nor_publish(tmp_path):
    import os

    record = _hub_run(tmp_path)
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / file_name(record)).write_text(json.dumps(bundle.make_bundle([record])))
    os.mkfifo(folder / "zz.pdx.json")  # nothing ever writes it: opening it to read would wait for ever
    assert run_pdx_here("hub", "verify", str(folder)).returncode == 0
    published = run_pdx_here("publish", str(tmp_path / "site"), "--bundles", str(folder))
    assert published.returncode == 0 and "published 1 runs" in published.stdout, published.stderr


def test_a_request_of_a_client_the_test_does_not_have_is_refused():
    from pdx.registry.measurement_bounds import clients_problem

    test = {"samples": [{"engine": {"clients": _clients(2)}}], "requests": [{"shard": 0}, {"shard": 1}]}
    assert clients_problem(test) is None
    test["requests"].append({"shard": 2})
    assert clients_problem(test) == (".requests[2].shard", "2 names no client of the test (0 to 1)")


def test_pdx_hw_prints_a_meter_plugin_s_name_escaped(capsys):
    """A meter plugin's name, device and source are a third party's text: `pdx hw` shows them with their
    control characters escaped (an OSC sequence retitled the terminal)."""
    from pdx.reports.display.hardware import print_meters

    print_meters({"meters": [{"name": "plug\x1b]0;pwned\x07", "covers": "machine", "device": "wall\x1b[2J",
                              "source": "file"}]})
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "plug\\x1b]0;pwned\\x07" in out
