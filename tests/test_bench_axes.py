"""llama-bench's placement axes on `pdx bench`: -ngl and -ncmoe lists make one run per combination,
as -t does, each run carrying its own engine options."""

import pytest

from conftest import run_pdx_here
from pdx.cli.bench import option_variants


def test_each_combination_is_a_run():
    assert option_variants((), "0,20,99", None) == [{"n_gpu_layers": "0"}, {"n_gpu_layers": "20"},
                                                  {"n_gpu_layers": "99"}]
    assert option_variants(("--flag a",), "99", "0,8") == [
        {"server_args": "--flag a", "n_gpu_layers": "99", "n_cpu_moe": "0"},
        {"server_args": "--flag a", "n_gpu_layers": "99", "n_cpu_moe": "8"}]
    assert option_variants((), "0-32+16",
                           None) == [{"n_gpu_layers": str(n)} for n in (0, 16, 32)]  # llama-bench's ranges
    assert option_variants((), None, None) is None


@pytest.mark.parametrize("flag, value", [("-ngl", "-1"), ("-ncmoe", "x"), ("-ngl", "1,,2")])
def test_a_bad_list_is_one_line(flag, value):
    result = run_pdx_here("bench", flag, value)
    assert result.returncode != 0 and len(result.stderr.strip().splitlines()) == 1 and flag in result.stderr
