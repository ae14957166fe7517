"""The third bound of decode, the fixed cost per token, on the depth sweep recorded on a real H200.

No GPU here: the run is tests/data/h200/llama-bench-cuda-1b-f16-depth.json, the figures of
``pdx-show-bench-depth-1b-7ffa1462.txt`` (pdx's llamacpp-bench run of a 1B f16 llama at depths 0,
4096 and 16384, -ngl 99, on an NVIDIA H200) written as llama-bench JSON (tests/data/h200/README.md
says how), imported as any llama-bench file is: judged against the catalog's H200 (4.8 TB/s).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import pdx_here, pdx_import
from pdx.domain.ceilings import overhead

H200 = Path(__file__).with_name("data") / "h200"
DEPTH_SWEEP = H200 / "llama-bench-cuda-1b-f16-depth.json"
ONE_DEPTH = H200 / "llama-bench-cuda-1b-f16.json"
TG = ("tg128", "tg128@d4096", "tg128@d16384")


def _stored(registry_url: str, path: Path) -> tuple[str, dict]:
    from pdx import api

    (run_id,) = pdx_import(registry_url, path)["added"]
    return run_id, api.open_registry(registry_url).get_run(run_id)


@pytest.fixture
def depth_run(registry_url) -> tuple[str, dict]:
    return _stored(registry_url, DEPTH_SWEEP)


def test_the_h200_depth_sweep_has_a_fixed_cost_of_about_0_8_ms_per_token(depth_run):
    """Time per token beyond the ceiling (1/771 s - 2.47 GB / 4.8 TB/s = 0.78 ms at d0, 0.83 and 0.95 ms
    deeper), read at depth 0 over the three depths: 0.785 ms; its own bound alone is ~1,270 t/s."""
    _, run = depth_run
    (estimate,) = overhead.fixed_cost(run)
    assert estimate["depths"] == [0, 4096, 16384] and estimate["batch"] == 1 and estimate["n_gen"] == 128
    assert estimate["fixed"] == pytest.approx(0.785e-3, abs=0.01e-3)
    assert estimate["alone"] == pytest.approx(1274, rel=0.01)
    assert estimate["method"].startswith("from the depth sweep's intercept, 3 depths")
    assert "4.8 TB/s" in estimate["method"]
    assert set(estimate["tests"]) == set(TG)
    for name, bound in estimate["tests"].items():
        assert bound["binding"] == "overhead", name  # 0.785 ms fixed beside 0.52-0.63 ms of reads at the ceiling
        ceiling = next(t for t in run["tests"] if t["name"] == name)["ceilings"]["ceiling"]
        assert bound["bound"] < ceiling  # a third bound below the memory ceiling
    assert estimate["tests"]["tg128@d16384"]["bound"] == pytest.approx(1 / (0.785e-3 + 2.4e9 * 1.25 / 4.8e12),
                                                                       rel=0.02)
    assert [round(t["fraction"], 2) for t in estimate["tests"].values()] == [1.0, 0.97, 0.9]


def test_pdx_show_names_the_bound_that_binds_and_how_it_was_estimated(depth_run, registry_url, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    run_id, _ = depth_run
    out = pdx_here("show", run_id, "--registry", registry_url)
    flat = " ".join(out.split())  # the console wraps lines longer than its width
    assert re.search(r"fixed cost per token: 0\.78\d ms ± 0\.00\d+ ms \(from the depth sweep's intercept, "
                     r"3 depths: .*4\.8 TB/s.*\); alone it allows 1,27\d t/s", flat), out
    for name in TG:
        assert re.search(rf" {re.escape(name)}: overhead-bound: 0\.78\d ms per token of fixed cost", flat), out
        row = next(line for line in out.splitlines() if f" {name} " in line)
        assert "overhead-bound: 0.78" in row  # the bench table's notes
    pp = next(line for line in out.splitlines() if " pp512 " in line)
    assert "overhead" not in pp


def test_the_run_page_shows_it_beside_the_hardware_figures(depth_run, registry_url, tmp_path):
    run_id, _ = depth_run
    page = tmp_path / "report.html"
    pdx_here("report", run_id, "-o", str(page), "--registry", registry_url)
    html = page.read_text()
    assert "fixed cost per token" in html and "from the depth sweep&#39;s intercept, 3 depths" in html
    assert "overhead-bound: 0.785 ms per token of fixed cost" in html


def test_one_depth_leaves_it_out_with_no_error(registry_url, monkeypatch):
    """The recorded llama-bench run at depth 0 only: nothing to fit, so no third bound and nothing said."""
    monkeypatch.setenv("COLUMNS", "200")
    run_id, run = _stored(registry_url, ONE_DEPTH)
    assert overhead.fixed_cost(run) == [] and overhead.lines(run) == [] and overhead.notes(run) == {}
    out = pdx_here("show", run_id, "--registry", registry_url)
    assert "fixed cost" not in out and "overhead" not in out


def test_no_decode_or_no_ceiling_leaves_it_out(depth_run):
    _, run = depth_run
    prefill_only = dict(run, tests=[t for t in run["tests"] if t["kind"] == "pp"])
    assert overhead.fixed_cost(prefill_only) == []
    no_ceilings = dict(run, tests=[dict(t, ceilings=None) for t in run["tests"]])
    assert overhead.fixed_cost(no_ceilings) == []
    at_the_ceiling = dict(run, tests=[_at_ceiling(t) for t in run["tests"]])
    assert overhead.fixed_cost(at_the_ceiling) == []  # no time beyond the ceiling: no fixed cost to name


def _at_ceiling(test: dict) -> dict:
    record = test.get("ceilings") or {}
    return dict(test, ceilings=dict(record, measured=record.get("ceiling")))
