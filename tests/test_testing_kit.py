"""pdx.testing itself: each contract check fails on a backend that breaks its rule and
passes on one that keeps it; the class form runs under pytest as a plugin author's would.
The backends here sleep per token (tests/sleep_backend.py); the real ones run the same
suite against their engines in tests/test_contract_*.py."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pdx.testing import Harness, Params, Target, checks, processes, run_contract

from sleep_backend import SleepBackend

PARAMS = Params(depth=64, cancel_gen=128)


def harness(tmp_path, mode="", counted=True) -> Harness:
    counter = (lambda backend: (lambda: backend.tokens)) if counted else (lambda backend: None)
    return Harness(Target(SleepBackend, options={"mode": mode} if mode else {}), PARAMS, tmp_path, counter)


@pytest.mark.parametrize("counted", [True, False])
def test_a_backend_that_keeps_the_contract_passes_every_check(tmp_path, counted):
    run_contract(harness(tmp_path, counted=counted))


@pytest.mark.parametrize("mode, check, counted, message", [
    ("yield-warmup", checks.check_warmup, True, "a warm-up run was yielded as a sample"),
    ("skip-warmup", checks.check_warmup, True, "a warm-up run was yielded as a sample"),
    ("ignore-depth", checks.check_depth, True, "filling the depth takes 64 tokens"),
    ("burst-short", checks.check_exact_tokens, True, "tg16, request 0: 16 tokens received of 17 asked for"),
    ("extra-token", checks.check_exact_tokens, False, r"1 generated tokens, the test needs 32 \+ 0"),
    ("microseconds", checks.check_exact_tokens, False, "Sample.ns is nanoseconds"),
    ("nan", checks.check_exact_tokens, False, "cannot be stored"),
    ("traceback", checks.check_errors, False, "raised ValueError: short read"),
    ("swallow-ctrl-c", checks.check_cancel_and_close, False, "swallowed KeyboardInterrupt"),
])
def test_each_check_catches_the_mistake_it_is_for(tmp_path, mode, check, counted, message):
    h = harness(tmp_path, mode, counted)
    try:
        with pytest.raises(AssertionError, match=message):
            check(h)
    finally:
        h.close()


@pytest.mark.parametrize("mode, check, counted, message", [
    ("skip-warmup", checks.check_warmup, False, "warm-up skipped or counted"),
    ("time-depth", checks.check_depth, False, "before the clock starts"),
    ("time-depth", checks.check_depth, True, "before the clock starts"),
])
def test_what_only_the_clock_suggests_is_a_warning(tmp_path, mode, check, counted, message):
    """A busy machine can make a correct backend look like these: the clock never fails a check."""
    h = harness(tmp_path, mode, counted)
    try:
        with pytest.warns(checks.ContractWarning, match=message):
            check(h)
    finally:
        h.close()


def test_a_server_streaming_in_one_burst_is_asked_again_then_its_refusal_checked(tmp_path):
    h = harness(tmp_path, "burst-once")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", checks.ContractWarning)
            checks.check_exact_tokens(h)  # the first tg refused, asked again: samples checked as usual
        assert h.backend.bursts == 1
    finally:
        h.close()
    h = harness(tmp_path, "burst")
    try:
        with pytest.warns(checks.ContractWarning, match="sent every token at once in 3 tries"):
            checks.check_exact_tokens(h)
            checks.check_warmup(h)
        assert h.backend.bursts == 4 * 3 + 2 * 3  # tg, pp+tg, tg/b2, pp+tg/b2, then the warm-up check's two tg
    finally:
        h.close()


def test_a_backend_that_skips_base_init_accepts_any_option(tmp_path):
    class NoBaseInit(SleepBackend):
        def __init__(self, config):
            self.config, self.mode, self.tokens, self.model = config, "", 0, None

    h = Harness(Target(NoBaseInit), PARAMS, tmp_path)
    with pytest.raises(AssertionError, match="an unknown -o option was accepted"):
        checks.check_errors(h)


def test_an_interrupt_leaving_a_process_behind_is_caught(tmp_path):
    class Leaky(SleepBackend):
        def run(self, test, repetitions, warmup):
            self.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            yield from super().run(test, repetitions, warmup)

    h = Harness(Target(Leaky), PARAMS, tmp_path)
    try:
        with pytest.raises(AssertionError, match="left processes behind"):
            checks.check_cancel_and_close(h)
    finally:
        h._backend.child.kill() if h._backend else None
        h.close()


TESTS = Path(__file__).parent
AUTHOR_MODULE = '''
from pdx.testing import BackendContract, Params
from sleep_backend import SleepBackend


class TestKept(BackendContract):
    backend = SleepBackend
    params = Params(depth=64)


class TestSwallowed(BackendContract):
    backend = SleepBackend
    options = {"mode": "swallow-ctrl-c"}
    params = Params(depth=64)


def test_one_fixture(pdx_backend_contract):
    pdx_backend_contract(SleepBackend, params=Params(depth=64))
'''


def test_the_suite_runs_under_pytest_as_a_plugin_authors_does(tmp_path):
    (tmp_path / "test_author.py").write_text(AUTHOR_MODULE)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", str(tmp_path)],
                            capture_output=True, text=True, cwd=tmp_path, timeout=300,
                            env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert "1 failed, 14 passed" in result.stdout, result.stdout[-3000:]
    assert "FAILED test_author.py::TestSwallowed::test_ctrl_c_mid_run_then_close" in result.stdout


def test_the_process_check_is_skipped_where_ps_stops_answering(tmp_path, monkeypatch):
    """``ps`` that answered before the backend existed and cannot now (gone from PATH here; a timeout on a busy
    machine) leaves the check unable to say, not failing on a missing snapshot."""
    before = processes.snapshot()
    if before is None:
        pytest.skip("no ps here")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert processes.snapshot() is None
    assert checks.leftovers(before, None) is None
