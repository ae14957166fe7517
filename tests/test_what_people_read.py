"""The small things a person reads wrong (issue 38): units chosen by magnitude, what ± means, how
many samples there are, a serving run's requests over time on its own page. Each test reads the
text a person sees: the terminal's, or the page's HTML."""

from __future__ import annotations

import json
from html import unescape
import random
import re
from pathlib import Path

import pytest
from rich.console import Console

from pdx.reports.display import print_run
from pdx.registry import Registry
from pdx.reports.site import pages
from pdx.reports.report.single_file import render_report
from pdx.reports.site.builder import PageRenderer
from pdx.reports.results import read_run
from pdx.domain.workload import TestSpec

from conftest import pdx_here, pdx_import
from runfactory import FOUR, START, add_run, four_runs, hardware, model

DATA = Path(__file__).with_name("data")


@pytest.fixture
def run(tmp_path) -> dict:
    """A run of two tests, five repetitions each, judged against the catalog's M2 Max."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    run_id = add_run(Registry(url), hardware("Apple M2 Max", 0), model("llama-3.1-8b-instruct-q4_0", 1),
                     "llamacpp-bench", START, random.Random(3), tests=[TestSpec(512, 0), TestSpec(0, 128)])
    return read_run(Registry(url), run_id)


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_a_probed_cpu_compute_reads_in_gflops_not_a_hundredth_of_a_tflop(run):
    """19.2 GFLOP/s and 10.6 GB/s (a busy 2-core machine's probe) read as such on the run's page."""
    run["ceiling_basis"] |= {"flops": 19.2e9, "bandwidth": 10.6e9}
    page = _text(render_report([run]))
    assert "19.2 GFLOP/s" in page and "10.6 GB/s" in page
    assert "0.02 TFLOP/s" not in page and "TFLOP/s" not in page.split("Hardware figures")[1].split("raw samples")[0]


def test_what_plus_minus_means_is_said_in_the_terminal_and_on_the_page(run):
    console = Console(record=True, width=120, color_system=None)
    print_run(run, "sqlite:///r", console)
    terminal = console.export_text()
    assert "± std dev" in terminal.split("┡")[0]  # the header of the rate column
    page = render_report([run])
    assert "tokens/s ± 95% CI" in _text(page)
    assert 'title="95% confidence interval of the mean">±' in page


def test_the_raw_samples_say_repetitions_per_test(run):
    page = _text(render_report([run]))
    assert "raw samples (5 repetitions of 2 tests)" in page
    run["tests"] = run["tests"][:1]
    run["tests"][0]["samples"] = run["tests"][0]["samples"][:1]
    assert "raw samples (1 repetition of 1 test)" in _text(render_report([run]))


def test_a_serving_run_page_has_its_requests_over_time(fake_server, tmp_path):
    """A run made by `pdx serve-bench` against the local test server: its own site page draws the
    requests over time as the report does, with the same caption."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    made = json.loads(pdx_here("serve-bench", "--backend", "vllm-server", "--url", fake_server, "-o",
                               "model_name=fake", "-c", "2", "-p", "8", "-n", "4", "--num-requests", "4",
                               "--registry", url, "--json"))[0]
    served = read_run(Registry(url), made["id"])
    (_, page), _ = PageRenderer(pages.site_info("t", [], inline=False)).run_page(served)
    report = render_report([served])
    for html in (page, report):
        text = _text(html)
        assert "Requests over time" in text
        assert "per request: grey the wait for a slot (scheduled to sent), blue to the first token" in text
    assert 'aria-label="timeline of requests: wait for a slot, prefill, decode"' in page


def test_an_imported_run_shows_what_its_file_said_and_nothing_invented(tmp_path, monkeypatch):
    """llama-bench's JSON (3 samples a test) and its markdown table (means only), imported: the terminal and
    the page give the repetitions the samples hold, no seed, and no sha256 for a model file pdx never read."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    monkeypatch.setenv("COLUMNS", "120")
    for name, reps in (("llama_bench_tiny.json", "3 repetitions of 2 tests"),
                       ("llama_bench_tiny.md", "repetitions not in the file (the tool's own figures)")):
        added = pdx_import(url, DATA / name)["added"][0]
        shown = " ".join(pdx_here("show", added, "--registry", url).split())
        run = read_run(Registry(url), added)
        page = _text(render_report([run]))
        for text in (shown, page):
            assert f"{reps}, 1 warm-up (the tool's default), as llama-bench ran them (no seed)" in text, text
            assert "seed 0" not in text and "0 repetitions" not in text
            assert "not hashed (the importing tool named the model; pdx never read its file)" in text
            assert run["model"]["sha256"] not in text and run["model"]["sha256"][:12] not in text
        assert f"model {run['model']['name']} (not hashed)" in shown


def test_a_run_pdx_measured_keeps_its_hash_and_seed(run):
    page = _text(render_report([run]))
    assert run["model"]["sha256"] in page and "5 repetitions, 1 warm-up, seed 42" in page


def test_four_runs_side_by_side_are_four_hues_and_their_headers_can_wrap(tmp_path):
    """The report's bars of four runs: a distinct hue each (tableau10), not four shades of the phase's blue;
    the side-by-side table names each run's machine and model on lines of their own, which may wrap."""
    html = render_report(four_runs(f"sqlite:///{tmp_path / 'r.sqlite'}"))
    start = html.index('aria-label="Measured vs ceiling, per phase"')
    bars = html[start:html.index("</svg>", start)]
    assert {"#4c78a8", "#f58518", "#e45756", "#72b7b2"} <= set(re.findall(r'fill="(#[0-9a-f]{6})"', bars))
    assert "fill-opacity" not in bars
    side = html[html.index('id="side-by-side"'):html.index("</thead>", html.index('id="side-by-side"'))]
    for name, _ in FOUR:
        assert f'<span class="unit">{name}</span><br><span class="unit">llama-3.1-8b-instruct-q4_0</span>' in side
    assert "table.matrix thead th .unit { white-space: normal; overflow-wrap: anywhere; }" in html
