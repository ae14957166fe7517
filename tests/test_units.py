"""Quantities as users type them, and one-line errors for the rest."""

import pytest

from pdx.contract.errors import PdxError
from pdx.base.units import fmt_si, parse_bandwidth, parse_bytes, parse_count, parse_flops


@pytest.mark.parametrize("text, value", [
    ("400GB/s", 400e9), ("3.35TB/s", 3.35e12), ("400 GB/s", 400e9), ("800GBps", 800e9),
    ("68.25 GB/s", 68.25e9), ("100GiB/s", 100 * 2**30), ("1e11B/s", 1e11),
    # a memory by its type: 64-bit channels, or a SoC's bus width
    ("DDR5-4800x8", 4800e6 * 8 * 8), ("ddr4-3200x2", 51.2e9), ("LPDDR5X-8000x256bit", 256e9),
])
def test_bandwidth(text, value):
    assert parse_bandwidth(text) == pytest.approx(value)


@pytest.mark.parametrize("text, value", [
    ("27TFLOPS", 27e12), ("989 TFLOP/s", 989e12), ("1.2PFLOPS", 1.2e15), ("500TOPS", 500e12),
    ("150GFLOPS", 150e9), ("2e13FLOPS", 2e13),
])
def test_flops(text, value):
    assert parse_flops(text) == pytest.approx(value)


@pytest.mark.parametrize("text, value", [
    ("3.83GB", 3.83e9), ("24GiB", 24 * 2**30), ("24Gi", 24 * 2**30), ("512MB", 512e6), ("4096", 4096.0),
])
def test_bytes(text, value):
    assert parse_bytes(text) == pytest.approx(value)


@pytest.mark.parametrize("text, value", [("7B", 7e9), ("70b", 70e9), ("405M", 405e6), ("7000000000", 7e9),
                                         ("1.5T", 1.5e12)])
def test_counts(text, value):
    assert parse_count(text) == pytest.approx(value)


@pytest.mark.parametrize("parse, text, needle", [
    (parse_bandwidth, "-400GB/s", "is negative"),
    (parse_bandwidth, "0GB/s", "is zero"),
    (parse_bandwidth, "fast", "cannot read 'fast'"),
    (parse_bandwidth, "400", "has no unit"),
    (parse_bandwidth, "400GHz", "unknown unit"),
    (parse_flops, "27TFLIPS", "unknown unit 'TFLIPS'"),
    (parse_flops, "0.0TFLOPS", "is zero"),
    (parse_bytes, "3.8XB", "unknown unit prefix 'X'"),
    (parse_count, "7Q", "unknown unit 'Q'"),
])
def test_bad_figures_are_one_line_errors(parse, text, needle):
    with pytest.raises(PdxError) as info:
        parse(text, "--x")
    message = str(info.value)
    assert needle in message and message.startswith("--x: ") and "\n" not in message


def test_formatting():
    assert fmt_si(3.35e12, "B/s") == "3.35 TB/s"
    assert fmt_si(989.5e12, "FLOP/s", 4) == "989.5 TFLOP/s"
    assert fmt_si(None, "B") == "?"
