"""An engine's history (pdx history, pdx check --history): real pdx runs of tests/sleep_backend.py, a
real backend whose engine sleeps a set time per token, stored with the engine version each reports.
A slowdown is planted at one version; a second series keeps one speed and must show no step."""

from __future__ import annotations

import json

import pytest

from conftest import pdx_here, run_pdx_here

VERSIONS = [f"b{n}" for n in range(98, 106)]  # b98..b105: b100 onwards sorts after b99 as a number
PLANTED = "b102"
FAST, SLOW = 0.001, 0.0014  # seconds a token costs before and after the planted version


@pytest.fixture
def sleep_plugin(monkeypatch):
    """tests/sleep_backend.py registered through an entry point, as a plugin would be, beside pdx's own."""
    from pdx.base import plugin_manager

    from sleep_backend import register_as_plugin

    register_as_plugin(monkeypatch, "pdx_test_sleep_history", with_pdx_plugins=True)
    yield
    plugin_manager.reset()


def bench(url: str, model, version: str, token_s: float) -> str:
    out = pdx_here("bench", "--backend", "sleep", "-m", str(model), "-p", "64", "-n", "0", "-r", "4",
                   "-o", f"engine_version={version}", "-o", f"token_s={token_s}", "--registry", url, "--json")
    return json.loads(out)[0]["id"]


@pytest.fixture
def planted(sleep_plugin, tiny_gguf, tmp_path) -> tuple[str, dict[str, str]]:
    """A registry of one run per version, stored out of version order, slower from PLANTED on."""
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    order = VERSIONS[4:] + VERSIONS[:4]  # dates and versions disagree: the timeline must follow versions
    ids = {v: bench(url, tiny_gguf, v, SLOW if VERSIONS.index(v) >= VERSIONS.index(PLANTED) else FAST) for v in order}
    return url, ids


def test_the_planted_step_is_found_at_its_version_in_pdx_history(planted):
    url, ids = planted
    found = json.loads(pdx_here("history", "--registry", url, "--json"))
    (timeline,) = found["timelines"]
    assert found["ordered_by"] == "version"
    assert [p["version"] for p in timeline["points"]] == VERSIONS
    assert [p["run"] for p in timeline["points"]] == [ids[v] for v in VERSIONS]
    (step,) = timeline["steps"]
    assert (step["before"], step["after"], step["regression"]) == ("b101", PLANTED, True)
    low, high = step["ci95"]
    assert low <= step["change"] <= high < 0  # about 1/1.4 - 1 = -29%
    assert timeline["latest"] == ids[VERSIONS[-1]] and timeline["best"] in {ids[v] for v in VERSIONS[:4]}
    shown = pdx_here("history", "--registry", url)
    assert "b101 -> b102" in shown and "regression" in shown and "pp64" in shown


def test_check_history_fails_on_the_newest_regression(planted):
    url, ids = planted
    result = run_pdx_here("check", "--history", "--registry", url)
    assert result.returncode == 1, result.stderr
    assert "b101 -> b102" in result.stdout


def test_a_noise_only_series_has_no_step_and_passes(sleep_plugin, tiny_gguf, tmp_path):
    url = f"sqlite:///{tmp_path / 'noise.sqlite'}"
    for version in VERSIONS[:6]:
        bench(url, tiny_gguf, version, FAST)
    found = json.loads(pdx_here("history", "--registry", url, "--json"))
    assert [t["steps"] for t in found["timelines"]] == [[]]
    assert len(found["timelines"][0]["points"]) == 6
    result = run_pdx_here("check", "--history", "--registry", url)
    assert result.returncode == 0, result.stderr
    assert "no step found" in result.stdout


def test_history_refuses_a_selection_of_two_backends(tmp_path):
    """Stored runs of runfactory (made-up figures): only the selection is under test."""
    import random

    from pdx.registry import Registry

    from runfactory import START, add_run, hardware, model

    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    result = run_pdx_here("history", "--registry", url)
    assert result.returncode == 2 and "no run matches" in result.stderr
    store = Registry(url)
    for backend in ("llamacpp-bench", "llamacpp-python"):
        add_run(store, hardware("AMD EPYC 9654", 0), model("m", 1), backend, START, random.Random(1))
    store.close()
    result = run_pdx_here("history", "--registry", url)
    assert result.returncode == 2
    assert "span 2 backends (llamacpp-bench, llamacpp-python); narrow the selection" in result.stderr
    assert json.loads(pdx_here("history", "--backend", "llamacpp-python", "--registry", url, "--json"))["backend"] == \
        "llamacpp-python"


def test_check_history_needs_three_runs_and_one_gate(sleep_plugin, tiny_gguf, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    bench(url, tiny_gguf, "b1", FAST)
    result = run_pdx_here("check", "--history", "--registry", url)
    assert result.returncode == 3 and "fewer than three runs" in result.stderr
    result = run_pdx_here("check", "--registry", url)
    assert result.returncode == 2 and "--baseline" in result.stderr


def test_the_site_has_a_history_page_with_the_step_marked_and_each_run_linked(planted, tmp_path):
    url, ids = planted
    site = tmp_path / "site"
    pdx_here("publish", str(site), "--registry", url)
    index = (site / "history.html").read_text()
    (page,) = list((site / "history").glob("*.html"))
    assert page.name in index
    html, data = page.read_text(), json.loads(page.with_suffix(".json").read_text())
    (timeline,) = data["histories"][0]["timelines"]
    assert [p["version"] for p in timeline["points"]] == VERSIONS
    assert all(p["ci95"] is not None for p in timeline["points"])
    assert [(s["before"], s["after"], s["regression"]) for s in timeline["steps"]] == [("b101", PLANTED, True)]
    assert "regression</strong> between b101 and b102" in html and "<svg" in html
    for run_id in ids.values():
        assert f'href="../runs/{run_id}.html"' in html
    (chart,) = data["charts"]
    assert chart["vega_lite"]["layer"][-1]["data"]["values"] == [{"after": PLANTED, "kind": "regression"}]
    doc = (site / "DATA.md").read_text()  # every field of both files is described

    def keys(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key != "vega_lite":
                    yield key
                    yield from keys(value)
        elif isinstance(node, list) and node:
            yield from keys(node[0])

    index_data = json.loads((site / "history.json").read_text())
    assert {k for k in [*keys(data), *keys(index_data)] if f"`{k}`" not in doc} == set()


def test_a_run_exports_for_bencher_and_github_action_benchmark(planted, tmp_path):
    url, ids = planted
    run = ids[PLANTED]
    shown = json.loads(pdx_here("show", run, "--registry", url, "--json"))
    (test,) = shown["tests"]
    rate = test["stats"]["rate"]
    bmf = json.loads(pdx_here("export", run, "--format", "bmf", "-o", "-", "--registry", url))
    name = f"{shown['model']['name']} {test['name']}"
    assert bmf == {name: {"throughput": {"value": rate["mean"], "lower_value": rate["mean"] - rate["ci95"],
                                         "upper_value": rate["mean"] + rate["ci95"]}}}
    out = tmp_path / "gab.json"
    pdx_here("export", run, "--format", "gab", "-o", str(out), "--registry", url)
    (entry,) = json.loads(out.read_text())
    assert (entry["name"], entry["unit"], entry["value"]) == (name, "t/s", rate["mean"])
    assert entry["range"].startswith("± ") and PLANTED in entry["extra"] and run in entry["extra"]
    result = run_pdx_here("export", "--format", "bmf", "-o", "-", "--registry", url)
    assert result.returncode == 2 and "exports one run's figures, and 8 were selected" in result.stderr


def test_a_sparkline_spans_its_values_and_shows_the_newest():
    from pdx.reports.display.history import SPARK_POINTS, sparkline

    assert sparkline([1.0, 2.0, 3.0]) == "▁▅█" and sparkline([5.0, 5.0]) == "▅▅" and sparkline([]) == ""
    assert len(sparkline([float(i) for i in range(100)])) == SPARK_POINTS
