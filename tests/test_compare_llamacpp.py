"""pdx compare on real llama.cpp runs: fewer threads is a real slowdown (decode
on these 2-core machines is compute-bound), a repeat is not a change."""

import json
import re

import pytest

from pdx.synth import get_shape, write_gguf

from conftest import run_pdx

pytestmark = pytest.mark.llamacpp


@pytest.fixture(scope="module")
def small_gguf(tmp_path_factory):
    # 100M parameters: big enough that a second thread pays, small enough for seconds a run.
    return write_gguf(get_shape("100m"), "f16", tmp_path_factory.mktemp("models") / "100m-f16.gguf")


def bench(registry, model, threads):
    result = run_pdx("bench", "--registry", registry, "--backend", "llamacpp-python", "-m", str(model),
                     "-p", "64", "-n", "16", "-r", "6", "-t", str(threads), "--json")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    return run["id"]


def marks(output: str) -> dict[str, str]:
    """test name -> asv mark, from the asv-style lines (mark first, test name last)."""
    found = {}
    for line in output.splitlines():
        match = re.match(r"^([-+~x! ]) +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+  (\S+)", line)
        if match:
            found[match[2]] = match[1]
    return found


def test_fewer_threads_is_worse_and_a_repeat_is_not_significant(registry_url, small_gguf, tmp_path):
    # The premise holds on an idle 2-core machine (CI's). With other work on the cores a
    # second engine thread waits for a core and 2 threads can run slower than 1 (seen: 5x),
    # so a pair measured while the cores were busy is measured again, at most twice.
    for _ in range(3):
        two = bench(registry_url, small_gguf, 2)
        one = bench(registry_url, small_gguf, 1)
        slower = run_pdx("compare", two, one, "--registry", registry_url, "--html", str(tmp_path / "cmp.html"))
        assert slower.returncode == 0, slower.stderr
        if marks(slower.stdout) == {"pp64": "+", "tg16": "+"}:
            break
    assert marks(slower.stdout) == {"pp64": "+", "tg16": "+"}, slower.stdout
    assert "threads: 2 -> 1" in slower.stdout and "2 regression(s)" in slower.stdout
    html = (tmp_path / "cmp.html").read_text()
    assert html.count('<svg class="chart"') == 1 and "verdict-worse" in html

    again = bench(registry_url, small_gguf, 2)
    repeat = run_pdx("compare", two, again, "--registry", registry_url)
    assert repeat.returncode == 0, repeat.stderr
    found = marks(repeat.stdout)
    assert set(found) == {"pp64", "tg16"} and set(found.values()) <= {" ", "~"}, repeat.stdout
    assert "no significant regression" in repeat.stdout
