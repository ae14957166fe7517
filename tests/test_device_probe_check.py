"""The CUDA probe check (tests/gpu/check_device_probes.py) against the probe recorded on a real H200.

No GPU here: the probe is ``pdx hw probe --device cuda --json`` as it ran there (tests/data/h200/,
copied from shared/recorded/h200), whose int8 figure came from ``torch._int_mm`` with a row-major second
operand (127 TFLOP/s, 6% of the peak); the fixed figures are those the README records for the same call
with a column-major one and for fp8 through ``torch._scaled_mm``.
"""

from __future__ import annotations

import copy
import re
import importlib.util
import json
from pathlib import Path

import pytest

from pdx.domain.hardware import cuda_probe

ROOT = Path(__file__).parent
RECORDED = json.loads((ROOT / "data" / "h200" / "pdx-hw-probe-cuda.json").read_text())


def _check():
    spec = importlib.util.spec_from_file_location("check_device_probes", ROOT / "gpu" / "check_device_probes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(tmp_path: Path, probe: dict) -> str:
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(probe))
    return str(path)


def _fixed() -> dict:
    """The recorded probe with the 8-bit figures a correct call reached on the same H200."""
    probe = copy.deepcopy(RECORDED)
    probe["matmul"]["i8"] |= {"flops": 963e12, "layout": "column-major",
                              "layouts": {"column-major": 963e12, "row-major": 127e12}}
    probe["matmul"]["f8"] = {"dtype": "float8_e4m3fn", "n": 8192, "repetitions": 10, "flops": 1482e12,
                             "samples": [1482e12], "layout": "column-major", "layouts": {"column-major": 1482e12},
                             "refused": {"row-major": "RuntimeError: mat2 must be col_major"}}
    return probe


def test_the_recorded_row_major_int8_figure_fails_the_check(tmp_path, capsys):
    assert _check().main([_write(tmp_path, RECORDED)]) == 1
    out = capsys.readouterr().out
    assert "FAIL i8 matmul: 6% of the vendor peak, below 29%" in out
    assert "FAIL f8 matmul: not measured on a GPU of compute capability 9.0" in out
    assert "FAIL f16" not in out and "FAIL copy" not in out  # the float and bandwidth figures pass


def test_the_figures_a_correct_call_reaches_pass(tmp_path, capsys):
    assert _check().main([_write(tmp_path, _fixed())]) == 0
    out = capsys.readouterr().out
    assert "device probes: ok" in out
    assert "i8 second operand: column-major 963 TFLOP/s, row-major 127 TFLOP/s" in out
    assert "f8 second operand: column-major 1.48 PFLOP/s, row-major refused" in out


def test_every_floor_says_where_it_comes_from(capsys):
    check = _check()
    check.print_floors()
    out = capsys.readouterr().out
    for figure, (key, reached, how) in check.REACHED.items():
        assert f"floor {figure}" in out and how in out
        assert 0 < reached * check.FLOOR_SHARE < reached <= 1
    assert check.FIGURES["i8 matmul"][1] * 1979e12 > 127e12 * 2  # far above the row-major figure


@pytest.mark.parametrize("figure", ["f16 matmul", "bf16 matmul", "f32 matmul", "i8 matmul", "f8 matmul"])
def test_a_figure_above_the_vendor_peak_fails(tmp_path, capsys, figure):
    probe = _fixed()
    key = figure.split()[0]
    probe["matmul"][key]["flops"] = 1.2 * _check().vendor(_catalog_h200(), _check().FIGURES[figure][0])
    assert _check().main([_write(tmp_path, probe)]) == 1
    assert f"FAIL {figure}: 120% of the vendor peak" in capsys.readouterr().out


def _catalog_h200():
    from pdx.domain.hardware import catalog

    return catalog.get("nvidia-h200")


def test_the_probe_times_8_bit_products_in_cublaslt_s_layout_first():
    """torch is not installed here (the probe imports it in its child process only): the layouts are
    checked as the probe will call them, on an object that records what was asked of it."""
    assert list(cuda_probe.LAYOUTS) == ["column-major", "row-major"]
    assert cuda_probe.FP8_CAPABILITY == (8, 9)
    assert "column-major second operand" in cuda_probe.METHOD["matmul"]
    asked = []

    class Matrix:
        def t(self):
            asked.append("t")
            return self

        def contiguous(self):
            asked.append("contiguous")
            return self

    cuda_probe.column_major(Matrix())
    assert asked == ["t", "contiguous", "t"]  # b.t().contiguous().t()


def test_pdx_hw_probe_shows_each_layout_of_an_8_bit_product(capsys):
    from pdx.reports.display.hardware import print_device_probe

    print_device_probe(_fixed() | {"cached": False})
    out = capsys.readouterr().out
    assert re.search(r"963 TFLOP/s i8 +int8, 8192\^3 \(best of 10; second operand column-major; row-major 127 "
                     r"TFLOP/s\)", out), out
    assert "f8    float8_e4m3fn, 8192^3 (best of 10; second operand column-major; row-major refused)" in out
    assert "f16   float16, 8192^3 (best of 10)" in out  # a float product has one layout: nothing more said
