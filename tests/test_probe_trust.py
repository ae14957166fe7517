"""A probe taken while another process kept a core busy is never used silently: the probe stores
the conditions it ran under, the next `pdx bench` (tests/sleep_backend.py, through the real
ceiling code) says in its ceiling line that its figures came from a loaded probe and gives the
command that replaces it, and a rate above such a ceiling names the probe's load as the likely
cause. The busy loop and the probe are real processes on this machine; nothing is faked."""

from __future__ import annotations

import json
import os
import signal

import pytest

from pdx.domain import ceilings, hardware
from pdx.measure import conditions
from pdx.measure import ceiling_sources as sources
from pdx.measure.ceiling_sources import REPROBE, busy, caveat, measure_probe
from pdx.measure.hardware import probe

from conftest import pdx_here
from test_conditions import _detached_busy_loop, sleep_plugin  # noqa: F401 (a fixture)

# Small, yet well over MIN_CPU_WINDOW_S in all, so other processes' CPU use is read: about 1.1 s here (the
# sizes of 32 MiB, 256 and 3 repetitions read 0.49 s on a quiet machine, under the minimum: CI failed on it).
SHORT = {"array_bytes": 64 * 2**20, "matmul_n": 512, "bandwidth_reps": 20, "matmul_reps": 10}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "120")


def _loaded_probe(threads: int) -> dict:
    """This machine's probe at ``threads``, measured (and cached) beside a busy loop on another core."""
    pid = _detached_busy_loop()
    try:
        return measure_probe(hardware.detect()["id"], threads, force=True, **SHORT)
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_probe_beside_a_busy_loop_is_not_used_silently(sleep_plugin, tiny_gguf, tmp_path):  # noqa: F811
    result = _loaded_probe(1)
    stored = result["conditions"]
    assert stored["window_s"] >= conditions.MIN_CPU_WINDOW_S, stored
    assert stored["other_cpu_cores"] >= conditions.BUSY_CORES, stored  # the loop alone is a core's worth
    assert busy(result) and f"other processes used {stored['other_cpu_cores']:.1f} cores" in caveat(result)
    # Kept in the cache, marked, until a quiet probe replaces it: the next bench reads it.
    assert json.loads(probe.cache_path(hardware.detect()["id"], 1).read_text())["conditions"] == stored

    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    shown = pdx_here("bench", "--backend", "sleep", "-m", str(tiny_gguf), "-p", "64", "-n", "0", "-r", "2",
                     "-t", "1", "--hardware", "probe", "--registry", url)
    line = " ".join(next(x for x in shown.split("\n\n") if "ceilings from probe" in x).split())
    assert "ran under load (other processes used" in line, shown
    assert f"run `{REPROBE}` on a quiet machine" in line, shown

    # A rate above a ceiling from that probe names the probe's load as the likely cause.
    model = json.loads(pdx_here("runs", "--registry", url, "--json"))[0]["model"]
    figures, _ = sources.resolve(hardware.detect(), model, 1, name="probe")
    test = {"name": "tg16", "kind": "tg", "n_prompt": 0, "n_gen": 16, "depth": 0, "batch": 1}
    bound = ceilings.test_ceilings(test, None, ceilings.model_figures(model), figures)["ceiling"]
    judged = ceilings.test_ceilings(test, {"rate": {"mean": bound * 1.5}}, ceilings.model_figures(model), figures)
    assert judged["above_ceiling"]
    assert "likely cause: the probe of" in judged["warning"] and "ran under load (other processes used" in \
        judged["warning"] and REPROBE in judged["warning"]


def test_pdx_hw_says_its_cached_probe_ran_under_load():
    _loaded_probe(hardware.default_threads())
    shown = " ".join(pdx_here("hw").split())
    assert "warning the probe of" in shown and "ran under load (other processes used" in shown
    assert f"run `{REPROBE}` on a quiet machine" in shown


def test_a_quiet_probe_replaces_a_loaded_one_and_says_nothing(monkeypatch):
    """The loaded probe is kept only until a quiet one replaces it, whatever its figures."""
    loaded = {"load_average": {"before": 0.0}, "conditions": {"other_cpu_cores": 1.0, "steal_cores": 0.0},
              "measured_at": "then", "threads": 1,
              "bandwidth": {"best": 50e9}, "matmul": {"f32": {"flops": 500e9}}}
    path = probe.cache_path("box", 1)
    probe._store(path, loaded)
    quiet = {"load_average": {"before": 0.0}, "conditions": {"other_cpu_cores": 0.0, "steal_cores": 0.0},
             "measured_at": "now", "threads": 1,
             "bandwidth": {"best": 40e9}, "matmul": {"f32": {"flops": 400e9}}}
    # The probe and the conditions read over it, as given (the real ones: the busy-loop test above).
    monkeypatch.setattr(probe, "run", lambda threads, **sizes: {k: v for k, v in quiet.items() if k != "conditions"})
    monkeypatch.setattr(sources.WATCH, "conditions", lambda started: quiet["conditions"])
    replaced = measure_probe("box", 1, force=True)
    assert replaced["measured_at"] == "now" and "kept_over" not in replaced and caveat(replaced) is None
    # A loaded one does not replace the quiet one where it measured less.
    monkeypatch.setattr(probe, "run", lambda threads, **sizes: dict(loaded, bandwidth={"best": 30e9}))
    monkeypatch.setattr(sources.WATCH, "conditions", lambda started: loaded["conditions"])
    kept = measure_probe("box", 1, force=True)
    assert kept["measured_at"] == "now" and "other processes used 1.0 cores" in kept["kept_over"]["note"]
