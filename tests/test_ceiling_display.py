"""Ceilings in the bench table and in `pdx hw`: every row gets a ceiling and
a fraction, and a rate above its ceiling is shouted, not printed as fact."""

import json

from rich.console import Console

from pdx.reports.display import print_run

from conftest import run_pdx


def _run(tests, basis):
    return {
        "id": "f" * 32, "status": "complete", "backend": "llamacpp", "threads": 2, "ceiling_basis": basis,
        "engine": {"name": "llama.cpp", "version": "b1", "commit": "abc"},
        "model": {"architecture": "llama", "n_params": 2e8, "dtype": "F16", "file_bytes": 4e8, "name": "m",
                  "sha256": "0" * 64, "path": "/m.gguf"},
        "tests": tests,
    }


def _test(name, rate, ceilings):
    return {"name": name, "status": "ok", "batch": 1, "ceilings": ceilings,
            "stats": {"rate": {"mean": rate, "stddev": 1.0}, "per_sequence_rate": rate}}


def _render(run) -> str:
    console = Console(record=True, width=220)
    print_run(run, "sqlite:///r", console)
    return console.export_text()


BASIS = {"source": "probe", "label": "probe, 2 "
         "threads", "bandwidth": 2.5e10, "flops": 1.3e11, "flops_dtype": "f32 sgemm"}


def test_every_row_shows_its_ceiling_bound_and_fraction():
    run = _run([
        _test("pp512", 400.0, {"ceiling": 650.0, "bound": "compute", "fraction": 400 / 650, "phases": {}}),
        _test("tg128", 20.0, {"ceiling": 62.5, "bound": "memory", "fraction": 0.32, "phases": {}}),
    ], BASIS)
    text = _render(run)
    assert "ceiling t/s" in text and "of ceiling" in text
    assert "650 cmp" in text and "62% " in text and "62.5 mem" in text and "32%" in text
    assert "ceilings from probe, 2 threads: 25 GB/s memory, 130 GFLOP/s f32 sgemm" in text


def test_a_rate_above_its_ceiling_is_flagged():
    warning = ("measured 80 t/s is above the 62.5 t/s memory-bound ceiling: a measurement error or wrong hardware "
               "figures")
    run = _run([_test("tg128", 80.0, {"ceiling": 62.5, "bound": "memory", "fraction": 1.28, "above_ceiling": True,
                                      "warning": warning, "phases": {}})], BASIS)
    text = _render(run)
    assert "128% ABOVE" in text and f"tg128: {warning}" in text


def test_runs_stored_before_ceilings_still_show():
    text = _render(_run([_test("tg128", 20.0, None)], None))
    assert "not computed" in text and "20.00" in text


def test_pdx_hw_shows_machine_catalog_and_probe(tmp_path, monkeypatch):
    from pdx.measure import hardware
    from pdx.measure.hardware import probe

    # A small probe, cached where `pdx hw` looks, so the command shows it without a full-size run.
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))
    probe.measure(hardware.detect()["id"], 1, array_bytes=4 * 2**20, matmul_n=128, bandwidth_reps=2, matmul_reps=2)
    result = run_pdx("hw", "-t", "1", "--json", env={"PDX_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["machine"]["cpu"]["logical_cores"] >= 1 and report["catalog"] is None
    assert report["probe"]["threads"] == 1 and report["probe"]["bandwidth"]["best"] > 0
    text = run_pdx("hw", "-t", "1", env={"PDX_CACHE_DIR": str(tmp_path / "cache")}).stdout
    assert "no match" in text and "cached" in text and "FLOP/s float32 GEMM" in text and "ridge" in text
    listing = run_pdx("hw", "list").stdout
    assert "nvidia-h100-sxm" in listing and "apple-m4-max" in listing
