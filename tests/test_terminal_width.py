"""Terminal tables at 80 columns (issue 26): `pdx show` and the end of `pdx bench` keep every row's
rate and its fraction of the ceiling whole, leave out the least useful columns first (the run's own
columns, the same on every row, are said once above the table), and say in one line what they left
out. No line is wider than the terminal."""

from __future__ import annotations

import json
import random
import re

import pytest
from rich.console import Console

from pdx.reports import figures
from pdx.reports.display import print_run
from pdx.registry import Registry
from pdx.reports.results import read_run
from pdx.domain.workload import TestSpec

from conftest import pdx_here, run_pdx
from runfactory import START, add_run, hardware, model

WIDTH = 80


def _fits(text: str, width: int = WIDTH) -> list[str]:
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    return lines


def _row(lines: list[str], name: str) -> list[str]:
    """The cells of the first table line whose first cell is ``name`` (a wrapped row's first line)."""
    for line in lines:
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if cells and name in cells:
            return cells
    raise AssertionError(f"no row {name}:\n" + "\n".join(lines))


@pytest.fixture
def judged_run(tmp_path):
    """A run judged against the catalog's ceilings (M2 Max): pp, tg, pp+tg, at depth and in a batch."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    tests = [TestSpec(512, 0), TestSpec(0, 128), TestSpec(512, 128), TestSpec(0, 128, depth=4096),
             TestSpec(0, 128, batch=4)]
    run_id = add_run(Registry(url), hardware("Apple M2 Max", 0), model("llama-3.1-8b-instruct-q4_0", 1),
                     "llamacpp-bench", START, random.Random(7), tests=tests)
    return url, run_id


def test_pdx_show_at_80_columns_keeps_every_rate_and_fraction_whole(judged_run, monkeypatch):
    url, run_id = judged_run
    run = read_run(Registry(url), run_id)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    lines = _fits(pdx_here("show", run_id, "--registry", url))
    for test in run["tests"]:
        cells = _row(lines, test["name"])
        rate = test["stats"]["rate"]
        assert f"{rate['mean']:.2f} ± {rate['stddev']:.2f}" in cells, cells  # the rate, whole, in its own cell
        assert any(c == f"{test['ceilings']['fraction']:.0%}" or c.startswith(f"{test['ceilings']['fraction']:.0%} ")
                   for c in cells), cells  # "45%", not "45"
    said = [line for line in lines if line.startswith("left out at 80 columns") or "above" in line]
    assert len(said) == 1 and ("model, size, params, backend, threads: above the table" in said[0]
                               or "the run's columns above it" in said[0]), lines
    # The run's own columns, left out of the rows, are said once above the table.
    assert lines[0].startswith("llama 8.00B Q4_0 · 3.73 GiB · 8.00 B params · llamacpp-bench · 8 threads"), lines[0]


def test_pdx_show_wide_leaves_nothing_out(judged_run, monkeypatch):
    url, run_id = judged_run
    monkeypatch.setenv("COLUMNS", "200")
    text = pdx_here("show", run_id, "--registry", url)
    assert "left out" not in text and "params" in text.split("┡")[0] and "t/s per seq" in text


def test_the_bench_table_at_80_columns_with_busy_notes(judged_run):
    """The table `pdx bench` ends with (print_run), its notes long: a busy machine, an adaptive stop, the
    engine's own rates. They wrap or go under the table; the rate and the fraction never do."""
    url, run_id = judged_run
    run = read_run(Registry(url), run_id)
    for i, test in enumerate(run["tests"]):
        test["conditions"] = {"other_cpu_cores": 1.5 + i, "steal_cores": 0.0}
        test["adaptive"] = {"repetitions": 9, "achieved_ci": 0.0123, "stopped_by": "cap"}
        test["engine"] = {"own_rates": {"label": "llama-bench", "pp": 1234.5, "tg": 56.75}}
    console = Console(record=True, width=WIDTH, color_system=None)
    print_run(run, "sqlite:///r", console)
    lines = _fits(console.export_text())
    text = " ".join(" ".join(lines).split())
    for i, test in enumerate(run["tests"]):
        cells = _row(lines, test["name"])
        assert f"{test['stats']['rate']['mean']:.2f} ± {test['stats']['rate']['stddev']:.2f}" in cells
        assert any(c.startswith(f"{test['ceilings']['fraction']:.0%}") for c in cells), cells
        assert f"other processes used {1.5 + i:.1f} cores" in text  # beside the row or under the table
    assert "llama-bench's own: pp 1234.5, tg 56.8" in text and "n=9 ±1.2%" in text and "cap reached" in text
    assert sum(1 for line in lines if line.startswith("left out at 80 columns") or ": above the table" in line) == 1


def test_the_end_of_pdx_bench_at_80_columns(fake_server, tmp_path):
    """`pdx bench` itself, over HTTP to the local test server, in an 80-column terminal."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    args = ("bench", "--backend", "vllm-server", "--url", fake_server, "-o", "model_name=fake", "-p", "16", "-n", "4",
            "-b", "1,2", "-r", "2", "--registry", url)
    result = run_pdx(*args, env={"COLUMNS": str(WIDTH)})
    assert result.returncode == 0, result.stderr
    lines = _fits(result.stdout)
    run = json.loads(run_pdx("show", "--json", *re.findall(r"run (\w{32}) complete", result.stdout),
                             "--registry", url).stdout)
    for test in run["tests"]:
        rate = test["stats"]["rate"]
        assert f"{rate['mean']:.2f} ± {rate['stddev']:.2f}" in _row(lines, test["name"]) if rate["stddev"] is not None \
            else f"{rate['mean']:.2f} ± ?" in _row(lines, test["name"])


def test_a_serving_run_at_80_columns_says_what_it_left_out(fake_server, tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    run = json.loads(pdx_here("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-o", "model_name=fake",
                              "-c", "2", "-p", "8", "-n", "4", "--num-requests", "4", "--slo", "ttft=60s",
                              "--registry", url, "--json"))[0]
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    lines = _fits(pdx_here("show", run["id"], "--registry", url))
    (test,) = run["tests"]
    cells = _row(lines, test["name"])
    stats = test["stats"]
    assert f"{stats['output_throughput']:.1f}" in cells and f"{stats['ttft_ms']['median']:.1f}" in cells
    assert f"{stats['goodput']:.2f}" in cells
    left = [line for line in lines if line.startswith("left out at 80 columns")]
    assert len(left) >= 1 and all("(under the table, a line a row)" in line for line in left)
    # Every figure left out of the row is under the table, with its name and unit.
    text = " ".join(" ".join(lines).split())
    for figure in figures.SERVING_COLUMNS:
        if figure.value(stats) is not None and figure.text(stats) not in cells:
            assert f"{figure.label} {figure.text(stats)}{' ' + figure.unit if figure.unit else ''}" in text, figure.key
    # What a narrow table leaves out, a wide one shows.
    monkeypatch.setenv("COLUMNS", "300")
    wide = pdx_here("show", run["id"], "--registry", url)
    assert "left out" not in wide and f"{stats['e2el_ms']['median']:.1f}" in wide


@pytest.mark.parametrize("width", [80, 120])
def test_pdx_runs_keeps_an_id_pdx_show_takes_and_both_rates(tmp_path, width):
    """`COLUMNS=80 pdx runs` in a subprocess: each row's id, read off the screen, is one `pdx show` accepts, and
    its pp and tg headlines are whole; what the table left out is under it, a line a run."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    ids = [add_run(Registry(url), hardware("Apple M2 Max", 0), model(f"llama-3.1-8b-instruct-q4_{i}", i),
                   "llamacpp-bench", START, random.Random(i), tags=["nightly"] if i else []) for i in range(3)]
    listed = run_pdx("runs", "--registry", url, env={"COLUMNS": str(width)})
    assert listed.returncode == 0, listed.stderr
    lines = _fits(listed.stdout, width)
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert len(rows) == 3, lines
    for cells in rows:
        shown = run_pdx("show", "--json", cells[0], "--registry", url)
        assert shown.returncode == 0, shown.stderr
        run = json.loads(shown.stdout)
        assert run["id"] in ids and run["id"].startswith(cells[0])
        for kind in ("pp", "tg"):
            test = next(t for t in run["tests"] if t["name"] == f"{kind}{512 if kind == 'pp' else 128}")
            assert f"{test['name']} {test['stats']['rate']['mean']:.1f}" in cells, cells
    if width == 80:
        assert any(line.startswith("left out at 80 columns") for line in lines), lines
        text = " ".join(" ".join(lines).split())
        assert all(f"{cells[0]}: " in text for cells in rows)  # each run's left-out columns under the table


@pytest.mark.parametrize("width", [80, 120])
def test_pdx_hw_list_fits_and_keeps_each_chip_s_name_and_figures(width):
    """`pdx hw list` in a subprocess: every chip's name (what --hardware takes) and its bandwidth and compute
    in the table, whole; its id beside it where there is room, else under the table."""
    from pdx.domain.hardware import catalog

    listed = run_pdx("hw", "list", env={"COLUMNS": str(width)})
    assert listed.returncode == 0, listed.stderr
    lines = _fits(listed.stdout, width)
    text = " ".join(" ".join(lines).split())
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    for chip in catalog.chips():
        assert chip.id in text  # in its row, or under the table
        row = next(r for r in rows if r[0] and chip.name.startswith(r[0]))
        assert any(c.endswith(("TB/s", "GB/s")) for c in row), row


def test_pdx_compare_at_80_columns_keeps_the_ids_and_every_rate(tmp_path):
    """`pdx compare A B` in an 80-column terminal: both run ids as prefixes `pdx show` takes, and each test's
    baseline and new median rates whole."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    ids = [add_run(Registry(url), hardware("Apple M2 Max", 0), model("llama-3.1-8b-instruct-q4_0", 1), "llamacpp-bench",
                   START, random.Random(i)) for i in range(2)]
    result = run_pdx("compare", ids[0][:8], ids[1][:8], "--registry", url, env={"COLUMNS": str(WIDTH)})
    lines = _fits(result.stdout)
    text = " ".join(lines)
    for run_id in ids:
        assert run_id[:12] in text
        assert run_pdx("show", run_id[:12], "--registry", url).returncode == 0
    runs = [read_run(Registry(url), i) for i in ids]
    for base, new in zip(*(r["tests"] for r in runs)):
        line = next(line for line in lines if line.endswith(f"  {base['name']}"))
        assert f"{base['stats']['rate']['median']:.2f}" in line and f"{new['stats']['rate']['median']:.2f}" in line
