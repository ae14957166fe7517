"""A site keeps few of its runs whole (pdx.reports.site.runs): its pages must come out exactly as they
do from every run kept whole. Runs of many kinds (threads that differ in one configuration, runs made
at one time, runs lacking the headline or classic tests, imported serving runs with requests and a
llama-bench table) are published both ways and the two sites compared file by file."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

from hypothesis import given, settings, strategies as st

from pdx.registry import Registry
from pdx.registry.transfer import import_file
from pdx.reports import comparison, groups, labels
from pdx.reports.charts import figures
from pdx.reports.hub import hubdata
from pdx.reports.site.pages import SiteLinks
from pdx.reports.site.builder import SiteBuilder, build_site
from pdx.reports.site.runs import SiteRuns
from pdx.reports.results import read_runs
from pdx.domain.workload import TestSpec

from runfactory import HARDWARE, START, add_run, fill, hardware, model

DATA = Path(__file__).parent / "data"


def _varied_runs(tmp_path: Path) -> list[dict]:
    registry = Registry(f"sqlite:///{tmp_path}/r.sqlite")
    fill(registry, 96, n_hardware=3, n_models=2)  # 12 configurations, 8 runs each
    rng = random.Random(7)
    hw, mdl = hardware(HARDWARE[0], 0), model("llama-0-8b-q4_0", 1)  # fill's first configuration
    later = START + timedelta(days=1)
    add_run(registry, hw, mdl, "llamacpp-bench", later, rng, threads=4)
    add_run(registry, hw, mdl, "llamacpp-bench", later, rng, threads=16)  # made at the same time
    add_run(registry, hw, mdl, "llamacpp-bench", later + timedelta(hours=1), rng, tests=[TestSpec(0, 64)])
    add_run(registry, hw, mdl, "llamacpp-bench", later + timedelta(hours=2), rng, tests=[TestSpec(256, 0)])
    cpu = hardware("Intel Core i5-1135G7", 11)  # not in the catalog: no ceilings
    for hours in range(3):
        add_run(registry, cpu, mdl, "llamacpp-python", later + timedelta(hours=hours), rng, speed=1 + hours % 2)
    for name in ("vllm_bench_serve_detailed.json", "guidellm_concurrent.json", "guidellm_poisson.json",
                 "aiperf_profile_export.json", "llama_bench_tiny.json"):
        import_file(registry, str(DATA / name))
    runs = read_runs(registry, samples=True)
    registry.close()
    return runs


def _publish(runs: list[dict], root: Path, keep_all: bool) -> SiteRuns:
    site_runs = SiteRuns(keep_all)
    for run in runs:
        site_runs.add(run)
    site_runs.finish()
    build_site(root, lambda writer: SiteBuilder(site_runs, writer, "varied", run_pages=runs))
    return site_runs


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
            and not p.name.startswith(".pdx")}


def test_a_site_from_the_runs_it_keeps_is_the_site_of_every_run(tmp_path):
    runs = _varied_runs(tmp_path)
    assert any(t.get("requests") for r in runs for t in r["tests"])  # serving runs are among them
    every = _publish(runs, tmp_path / "every", keep_all=True)
    kept = _publish(runs, tmp_path / "kept", keep_all=False)
    assert len(every.runs) == len(runs) == len(kept.listed)
    assert len(kept.runs) < len(runs)  # the test is one only if runs were let go
    mine, theirs = _files(tmp_path / "kept"), _files(tmp_path / "every")
    assert sorted(mine) == sorted(theirs)
    differ = [name for name in mine if mine[name] != theirs[name]]
    assert differ == []


def test_a_run_given_twice_is_listed_once():
    run = {"id": "a" * 32, "created_at": "2026-01-01T00:00:00", "tests": [], "hardware": {"id": "h"},
           "model": {"sha256": "m"}, "backend": "b", "status": "complete"}
    site_runs = SiteRuns()
    assert site_runs.add(run) and not site_runs.add(dict(run))
    assert [r["id"] for r in site_runs.finish().listed] == [run["id"]]


def _run(index: int, created: int, threads: int, rates: list[float | None]) -> dict:
    names = ["pp64", "tg16", "tg16@d64"]
    tests = [{"name": name, "kind": name[:2], "depth": 64 if "@" in name else 0, "batch": 1, "n_prompt": 64,
              "n_gen": 16, "status": "ok" if rate else "failed", "stats": {"rate": {"mean": rate,
                                                                                    "n": 1}} if rate else {}}
             for name, rate in zip(names, rates)]
    return {"id": f"{index:032x}", "created_at": f"2026-01-01T00:00:{created:02d}", "finished_at": None,
            "status": "complete", "backend": "b", "threads": threads, "tags": [], "engine": {"name": "e"},
            "hardware": {"id": "h", "name": "H"}, "model": {"sha256": "m", "name": "M"}, "tests": tests}


rate = st.one_of(st.none(), st.sampled_from([1.0, 2.0, 3.0]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([1, 2]), st.lists(rate, min_size=3, max_size=3)),
                min_size=1, max_size=12))
def test_the_kept_runs_answer_every_reader_as_every_run_does(specs):
    """In any order, with ties in time and rate: the newest rows of each series, the best headline
    runs, the estimate's and the classic table's runs are the same from the kept runs."""
    runs = [_run(i, *spec) for i, spec in enumerate(specs)]
    every, kept = SiteRuns(keep_all=True), SiteRuns()
    for run in runs:
        every.add(run)
        kept.add(run)
    every.finish(), kept.finish()
    assert kept.headline == every.headline == groups.headline_tests(every.runs)
    for namer in (labels.system_threads_label, lambda r: r["backend"]):
        assert figures.latest_rows(kept.runs, namer) == figures.latest_rows(every.runs, namer)
    for key in (groups.config_key, groups.hardware_key):
        mine, theirs = kept.groups(key), every.groups(key)
        assert list(mine) == list(theirs)
        for k in mine:
            assert mine[k].latest is theirs[k].latest and mine[k].every == theirs[k].every
            assert comparison.comparable_pair(mine[k].runs) == comparison.comparable_pair(theirs[k].runs)
            assert mine[k].headline(kept.headline) == theirs[k].headline(every.headline)
    links = SiteLinks()
    assert hubdata.buy_data(kept.runs, links, kept.listed) == hubdata.buy_data(every.runs, links, every.listed)
    assert hubdata.decode_vs_ceiling(kept.runs, links) == hubdata.decode_vs_ceiling(every.runs, links)
