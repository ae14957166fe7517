"""Every figure a test stores has a place on its run page, in `pdx report` and in `pdx show`, from the
one description of what each test kind shows (pdx.reports.figures): one run of each kind pdx can store is
made here (pp/tg at depth and batch, pp+tg split, over HTTP; serving load closed and open loop, with
an SLO, turns, a prefix-cache claim, an over-saturation stop; stall; cache cold/warm; capacity;
overhead; a tool's reported summary; a failed test), and each reader is searched for each figure as
the description writes it, row by row where it is a table."""

from __future__ import annotations

import json
import random
import uuid
from datetime import timedelta
from html.parser import HTMLParser

import pytest

from pdx.reports import figures
from pdx.contract.backend import EngineInfo, Sample
from pdx.registry import Registry, RunStart
from pdx.registry.bundle_schema import load_schema
from pdx.reports.labels import fmt_pct, fmt_rate
from pdx.reports.report.single_file import render_report
from pdx.reports.rows import run_rows
from pdx.reports.site.builder import publish
from pdx.measure.runner import TestOutcome
from pdx.domain.serving import capacity
from pdx.domain.serving.records import RequestRecord
from pdx.domain.serving.spec import SCENARIOS, ServeSpec
from pdx.reports.results import derive_stats, read_run, read_runs
from pdx.domain.workload import TestSpec

from conftest import pdx_here
from test_browser import browser, open_page  # noqa: F401  (the Chromium fixture, and the page opener)
from runfactory import ENVIRONMENT, START, _figures, hardware, model

MS = 1_000_000
BUSY = {"version": 1, "window_s": 2.0, "cpu_count": 8, "other_cpu_cores": 1.27, "own_cpu_cores": 0.98,
        "steal_cores": 0.0, "load_average": {"start": [1.5, 1.2, 1.0], "end": [2.25, 1.4, 1.1]},
        "frequency": {"source": "cpuinfo", "mhz": 2400.0, "max_mhz": 3500.0, "governor": "performance"},
        "thermal": None, "power": {"source": "mains"}, "cooldown_s": 0.5}
# The GPU as the recorded H200's nvidia-smi -q read it idle (tests/data/h200), then capped by its power limit.
_H200 = {"sm_mhz": 405.0, "max_sm_mhz": 1980.0, "memory_mhz": 3201.0, "max_memory_mhz": 3201.0, "celsius": 35.0,
         "power_w": 80.7, "power_limit_w": 700.0, "reasons": ["idle"]}
BUSY["gpu"] = {"source": "nvml", "devices": [{"index": 0, "name": "NVIDIA H200", "start": _H200,
                                              "end": _H200 | {"sm_mhz": 1410.0, "celsius": 71.0, "power_w": 699.2,
                                                              "reasons": ["sw_power_cap"]}}]}
QUIET = dict(BUSY, other_cpu_cores=0.04, own_cpu_cores=1.01, gpu=None)


def test_every_kind_the_record_schema_allows_has_a_description():
    kinds = load_schema()["$defs"]["test"]["properties"]["kind"]["enum"]
    assert kinds and set(kinds) <= set(figures.KINDS), set(kinds) - set(figures.KINDS)
    for kind in kinds:
        described = figures.KINDS[kind]
        assert described.columns and described.shows and described.title
        assert all(f.label and f.key for f in described.columns)
    assert set(SCENARIOS) == set(figures.SCENARIO_FIGURES), "a serving scenario with no description of its figures"


def test_a_statistic_no_description_shows_is_caught():
    test = {"name": "tg8", "kind": "tg", "stats": {"rate": {}, "per_sequence_rate": 1.0, "joules_per_token": 0.2}}
    assert figures.unshown(test) == ["joules_per_token"]
    assert figures.unshown({"name": "x", "kind": "serve", "stats": {"goodput": 1.0, "kv_evictions": 3}}) == [
        "kv_evictions"]


# --- runs of every kind, stored as pdx stores them --------------------------------------------------------

def _start(registry: Registry, backend: str, hw: dict, mdl, basis=None, offset: int = 0) -> str:
    run_id = uuid.uuid4().hex
    registry.start_run(RunStart(
        id=run_id, backend=backend, engine=EngineInfo("llama.cpp", "b1", "0c1e570", {"threads": 8}), model=mdl,
        hardware=hw, environment=ENVIRONMENT, environment_id="env-figures",
        workload={"tests": [], "repetitions": 3, "warmup": 1, "seed": 42}, threads=8, options={},
        command=f"pdx {backend}", pdx_version="0.1.0", created_at=START + timedelta(minutes=offset),
        ceiling_basis=basis))
    return run_id


def _rates_run(registry: Registry) -> str:
    """pp, tg, pp+tg (timed apart), at depth, in a batch, adaptive, beside a busy process, with the
    engine's own rates, against the catalog's ceilings."""
    hw, mdl = hardware("Apple M2 Max", 0), model("llama-8b-figures", 1)
    judged, basis = _figures(hw, mdl, 8)
    run_id = _start(registry, "llamacpp-python", hw, mdl, basis)
    rng = random.Random(3)
    tests = [TestSpec(512, 0), TestSpec(0, 128), TestSpec(512, 128), TestSpec(0, 128, depth=4096),
             TestSpec(0, 128, batch=4)]
    from pdx.domain import ceilings

    for ordinal, test in enumerate(tests):
        rate = ceilings.test_ceilings(test.to_dict(), None, *judged)["ceiling"] * (0.06 if ordinal == 0 else 0.5)
        samples = []
        for _ in range(4):
            ns = int((test.n_prompt + test.n_gen) * test.batch * 1e9 / (rate * rng.uniform(0.97, 1.03)))
            split = dict(prompt_ns=ns // 5, gen_ns=ns - ns // 5) if test.kind == "pg" else {}
            samples.append(Sample(ns=ns, n_prompt=test.n_prompt * test.batch, n_gen=test.n_gen * test.batch, **split))
        outcome = TestOutcome(ordinal=ordinal, test=test, warmup=1, samples=samples, started_at=START,
                              finished_at=START, conditions=BUSY if ordinal == 0 else QUIET,
                              adaptive={"repetitions": 4, "achieved_ci": 0.012, "target_ci": 0.02,
                                        "stopped_by": "target"} if ordinal == 1 else None,
                              engine={"own_rates": {"label": "llama.cpp", "pp": 301.5, "tg": 40.25}}
                              if ordinal == 2 else {})
        stats = derive_stats({**test.to_dict(), "samples": [s.to_dict() for s in samples]})
        outcome.ceilings = ceilings.test_ceilings(test.to_dict(), stats, *judged)
        registry.save_test(run_id, outcome.to_record())
    registry.finish_run(run_id, "complete")
    return run_id


def _stream(idx: int, role: str = "load", send: int = 0, first: int = 50, gaps=(10, 10, 10), n_prompt: int = 16,
            scheduled: int | None = None, usage: dict | None = None, thinking: int = 0) -> RequestRecord:
    """A request: sent ``send`` ms into the test, its first token ``first`` ms later, then one token a gap;
    the first ``thinking`` tokens a reasoning model's thinking."""
    t, events = first * MS, [(first * MS, 1)]
    for gap in gaps:
        t += gap * MS
        events.append((t, 1))
    phases = dict(reasoning_ns=first * MS, answer_ns=events[thinking][0], n_reasoning=thinking) if thinking else {}
    return RequestRecord(idx, n_prompt, len(events), role=role, send_ns=send * MS,
                         scheduled_ns=None if scheduled is None else scheduled * MS, first_ns=first * MS, end_ns=t,
                         events=events, usage=usage or {}, **phases)


def _serve(registry: Registry, run_id: str, ordinal: int, spec: ServeSpec, requests, engine=None, sample_engine=None,
           status="ok", error=None, conditions=QUIET) -> None:
    ns = max((r.send_ns + (r.end_ns or 0) for r in requests), default=1)
    sample = Sample(ns=ns, n_prompt=sum(r.n_prompt for r in requests), n_gen=sum(r.n_gen for r in requests),
                    engine=sample_engine or {}, requests=list(requests))
    registry.save_test(run_id, TestOutcome(ordinal=ordinal, test=spec, warmup=0, samples=[sample] if requests else [],
                                           started_at=START, finished_at=START, status=status, error=error,
                                           engine=engine or {}, conditions=conditions).to_record())


def _serving_runs(registry: Registry) -> list[str]:
    hw, mdl = hardware("AMD EPYC 9654", 2), model("served-8b", 2)
    made = []

    def run(offset):
        made.append(_start(registry, "vllm-server", hw, mdl, offset=offset))
        return made[-1]

    # A closed-loop sweep with an SLO (goodput), beside a busy machine; and a failed test.
    rid = run(1)
    slo = {"ttft": 60.0, "tpot": 20.0}
    for i, c in enumerate((1, 4)):
        spec = ServeSpec("load", 16, 4, concurrency=c, n_requests=8, slo=slo)
        # the first test a reasoning model's: two thinking tokens a request, then the answer
        reqs = [_stream(k, send=(k // c) * 90, first=50 + 5 * c + (k % 3), gaps=(10, 11, 12), thinking=2 * (c == 1))
                for k in range(8)]
        _serve(registry, rid, i, spec, reqs, conditions=BUSY if c == 4 else QUIET)
    _serve(registry, rid, 2, ServeSpec("load", 16, 4, concurrency=8, n_requests=8), [], status="failed",
           error="8 of 8 requests failed: connection refused")
    registry.finish_run(rid, "failed")
    # Open loop with turns and a system prompt: the schedule, the prefix cache's claim, the turns, and an
    # over-saturation stop.
    rid = run(2)
    spec = ServeSpec("load", 16, 4, rate=20.0, n_requests=6, system_prompt=8, turns=2)
    reqs = [_stream(k, role=f"turn{1 + k % 2}", send=k * 50 + k, scheduled=k * 50, first=55 + k,
                    usage={"prompt_tokens_details": {"cached_tokens": 16 * (k % 2)}}) for k in range(6)]
    saturation = {"at_s": 12.5, "window_s": 10.0, "due_in_window": 40, "ended_in_window": 21, "queue_growth": 19,
                  "queue_z": 3.35, "ttft_slope_ms_per_s": 41.25, "ttft_t": 6.1, "unsent_due": 7,
                  "test": "over the last 10 s, due - ended >= max(2, 3 sqrt(due + ended))"}
    # the server's own series, read every 250 ms beside the requests
    series = {"version": 1, "interval_ms": 250, "every_ms": 250, "failed": 0, "t_ns": [-50 * MS, 200 * MS, 450 * MS],
              "metrics": {"running": [0, 3, 1], "waiting": [0, 2, 0], "kv_cache_usage": [0.0, 0.42, 0.1],
                          "requests_done": [10, 12, 16], "preemptions": [0, 1, 1], "prefix_cache_hits": [0, 16, 48],
                          "prefix_cache_queries": [0, 96, 96]}}
    _serve(registry, rid, 0, spec, reqs, engine={"server": {"prefix_cache_hits": 48}},
           sample_engine={"saturation": saturation, "server_series": series})
    registry.finish_run(rid, "complete")
    # A stall: two steady streams, then a long prompt.
    rid = run(3)
    steady = [_stream(k, role="steady", send=0, first=40, gaps=(10,) * 5 + (90,) + (10,) * 4) for k in range(2)]
    intruder = _stream(2, role="intruder", send=95, first=85, gaps=(10,), n_prompt=512)
    _serve(registry, rid, 0, ServeSpec("stall", 16, 11, concurrency=2, inject=512), steady + [intruder])
    registry.finish_run(rid, "complete")
    # Cache cold, then warm.
    rid = run(4)
    _serve(registry, rid, 0, ServeSpec("cache-cold", 64, 4, concurrency=1, n_requests=3),
           [_stream(k, role="cold", send=k * 100, first=60) for k in range(3)],
           engine={"server": {"prefix_cache_hits": 0}})
    _serve(registry, rid, 1, ServeSpec("cache-warm", 64, 4, concurrency=1, n_requests=3, prefix=48),
           [_stream(k, role="warm", send=k * 100, first=25) for k in range(3)],
           engine={"server": {"prefix_cache_hits": 144}})
    registry.finish_run(rid, "complete")
    # Capacity under an SLO: the bracket, every point, what broke first.
    rid = run(5)
    points, reqs = [], []
    for i, (x, held, ttft) in enumerate([(1.0, True, 100.0), (2.0, True, 310.0), (4.0, False, 905.0),
                                         (2.0, True, 320.0), (4.0, False, 950.0)]):
        points.append({"x": x, "role": f"point{i}", "held": held, "broke": [] if held else ["ttft"],
                       "values": {"ttft": ttft, "itl": 20.5}, "requests": 3, "failed": 0, "saturation": None,
                       "gave_up": None if held else {"metric": "ttft", "over": 2, "of_planned": 5},
                       "output_throughput": 11.0 * x, "request_throughput": 2.75 * x, "origin_offset_ns": i * 1000 * MS,
                       "makespan_ns": 900 * MS})
        reqs += [_stream(10 * i + k, role=f"point{i}", send=i * 1000 + k * 100, scheduled=i * 1000 + k * 95,
                         first=int(ttft / 3)) for k in range(3)]
    found = capacity.summary(points, 2.0, 4.0, "rate", {"ttft": 500.0, "itl": 50.0}, 90.0, 0.25)
    _serve(registry, rid, 0, ServeSpec("capacity", 8, 4, n_requests=3, slo={"ttft": 500.0, "itl": 50.0}), reqs,
           sample_engine={"capacity": found})
    registry.finish_run(rid, "complete")
    # Where TTFT goes: the engine's prefill beside the server's TTFT, pair by pair.
    rid = run(6)
    pairs = [_stream(k, role="overhead", send=k * 200, first=40 + k, gaps=()) for k in range(3)]
    _serve(registry, rid, 0, ServeSpec("overhead", 128, 1, n_requests=3), pairs,
           sample_engine={"overhead": {"in_process": "llamacpp", "engine_prefill_ns": [31 * MS, 32 * MS, 30 * MS],
                                       "server_reported_prefill_ns": [33 * MS, None, 34 * MS]}})
    registry.finish_run(rid, "complete")
    # A tool's own summary, no requests (vllm bench serve without --save-detailed).
    rid = run(7)
    reported = {"serving": {"requests": 100, "completed": 100, "failed": 0, "duration_s": 20.5,
                            "request_throughput": 4.88, "output_throughput": 624.4,
                            "ttft_ms": {"mean": 120.5, "median": 118.25, "p99": 310.75},
                            "itl_ms": {"mean": 15.5, "median": 14.75, "p99": 40.25}}}
    _serve(registry, rid, 0, ServeSpec("load", 128, 128, rate=5.0, n_requests=100), [], engine={"reported": reported})
    registry.finish_run(rid, "complete")
    return made


def _http_run(registry: Registry) -> str:
    """pp/tg over HTTP: the rates, and the latencies of the requests behind them."""
    run_id = _start(registry, "vllm-server", hardware("AMD EPYC 9654", 2), model("served-8b", 2), offset=9)
    test = TestSpec(0, 4)
    samples = [Sample(ns=30 * MS + k * MS, n_gen=4, requests=[_stream(k, send=k * 100, first=50, gaps=(10, 10, 11))])
               for k in range(3)]
    registry.save_test(run_id, TestOutcome(ordinal=0, test=test, warmup=1, samples=samples, started_at=START,
                                           finished_at=START, conditions=QUIET).to_record())
    registry.finish_run(run_id, "complete")
    return run_id


@pytest.fixture(scope="module")
def made(tmp_path_factory, fake_server):
    """One registry holding a run of every kind; some of them made by `pdx serve-bench` against the
    local test server, as a user would; the site published from it."""
    folder = tmp_path_factory.mktemp("figures")
    url = f"sqlite:///{folder / 'r.sqlite'}"
    registry = Registry(url)
    ids = [_rates_run(registry), _http_run(registry), *_serving_runs(registry)]
    common = ("--backend", "vllm-server", "--url", fake_server, "-o", "model_name=fake", "--registry", url, "--json")
    for extra in (("--scenario", "sweep", "-c", "1,2", "-p", "8", "-n", "4", "--num-requests", "4",
                   "--slo", "ttft=60s,tpot=10s"),
                  ("--request-rate", "40", "-p", "8", "-n", "4", "--num-requests", "6", "--turns", "2",
                   "--system-prompt", "8"),
                  ("--scenario", "stall", "-c", "2", "--inject", "32", "-p", "8", "-n", "12"),
                  ("--scenario", "cache", "-p", "32", "-n", "4", "--num-requests", "3")):
        ids.append(json.loads(pdx_here("serve-bench", *common, *extra))[0]["id"])
    runs = [read_run(registry, i) for i in ids]
    root = folder / "site"
    publish(read_runs(registry, samples=True), root)
    return url, runs, root


def test_every_kind_and_scenario_is_made_here(made):
    _, runs, _ = made
    tests = [t for run in runs for t in run["tests"]]
    assert {t["kind"] for t in tests} == set(load_schema()["$defs"]["test"]["properties"]["kind"]["enum"])
    assert {(t.get("spec") or {}).get("scenario") for t in tests if t["kind"] == "serve"} == set(SCENARIOS)
    stats = [t["stats"] or {} for t in tests]
    for key in ("capacity", "stall", "overhead", "turns", "prefix_cache", "saturation", "goodput", "reported",
                "ttft_sched_ms", "serving", "prompt_rate"):
        assert any(key in s for s in stats), key
    assert any(t["adaptive"] for t in tests) and any((t["engine"] or {}).get("own_rates") for t in tests)


def test_no_test_holds_a_statistic_its_kind_does_not_show(made):
    _, runs, _ = made
    for run in runs:
        for test in run["tests"]:
            assert figures.unshown(test) == [], (test["name"], figures.unshown(test))


# --- reading the pages back ------------------------------------------------------------------------------

class _Page(HTMLParser):
    """A page's text (whitespace made single spaces) and its tables as rows of cell texts, with the
    number of rows in each table's body."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.words: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.bodies: list[int] = []
        self._open: list[dict] = []  # tables being read: {"index", "in_body"}
        self._cell: list[str] | None = None
        self._skip = 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script", "svg"):
            self._skip += 1
        elif tag == "table":
            self.tables.append([])
            self.bodies.append(0)
            self._open.append({"index": len(self.tables) - 1, "in_body": False})
        elif not self._open:
            return
        elif tag == "tbody":
            self._open[-1]["in_body"] = True
        elif tag == "tr":
            self.tables[self._open[-1]["index"]].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("style", "script", "svg"):
            self._skip -= 1
        elif not self._open:
            return
        elif tag == "table":
            self._open.pop()
        elif tag == "tbody":
            self._open[-1]["in_body"] = False
        elif tag in ("td", "th") and self._cell is not None:
            rows = self.tables[self._open[-1]["index"]]
            if rows:
                rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._open[-1]["in_body"]:
            self.bodies[self._open[-1]["index"]] += 1

    def handle_data(self, data):
        if self._skip:
            return
        self.words.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.words).split())


def _in_order(values: list[str], cells: list[str]) -> bool:
    """Each of ``values`` is a cell (or starts one: "442 ± 3.1"), in this order."""
    i = 0
    for cell in cells:
        if i < len(values) and (cell == values[i] or cell.startswith(values[i] + " ")):
            i += 1
    return i == len(values)


def _html_has_row(page: _Page, values: list[str]) -> bool:
    return any(_in_order(values, row) for table in page.tables for row in table)


def _shown_has_row(shown: str, values: list[str]) -> bool:
    for line in shown.splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").split("│")]
        if _in_order(values, [c for c in cells if c]):
            return True
    return False


def _expected(run: dict) -> tuple[list[list[str]], list[str]]:
    """What a reader must show of ``run``, as pdx.reports.figures writes it: the rows of its serving and latency
    tables (each row's cells, in order) and its notes and conditions (sentences)."""
    rows, sentences = [], []
    shown = figures.shown(run)
    for table in (shown.serving, shown.latency):
        for row in table.rows if table else []:
            rows.append([c.text for c in row.cells if c.text not in (figures.MISSING, "")] if row.cells else [row.test])
    for note in shown.notes:
        sentences += [note.text, *note.lines]
    sentences += [text for _, text, _ in shown.conditions]
    return rows, sentences


def _rates(run: dict) -> list[tuple[dict, list[str], list[str]]]:
    """Each pp/tg test: what its HTML row shows (rate, fraction of the ceiling), what its terminal row
    shows (rate ± stddev, fraction), and its notes (conditions, noise, adaptive stop, the engine's own)."""
    out = []
    rows = {(r.test, r.part): r for r in run_rows(run)}
    for test in run["tests"]:
        if figures.layout(test) != "rates" or not test["stats"]:
            continue
        row = rows[(test["name"], False)]
        page = [test["name"], fmt_rate(row.rate)]
        terminal = [test["name"], figures.RATE_COLUMNS[0].text(test["stats"])]
        if row.ceiling and row.ceiling.fraction is not None:
            page.append(fmt_pct(row.ceiling.fraction))
            terminal.append(f"{row.ceiling.fraction:.0%}")
        notes = [text for text, _ in figures.rate_notes(test)] + [t for t in [figures.own_rates(test)] if t]
        out.append((test, page, terminal, notes))
    return out


def _check_page(page: _Page, run: dict, where: str) -> None:
    rows, sentences = _expected(run)
    for values in rows:
        assert _html_has_row(page, values), (where, values)
    for sentence in sentences:
        assert " ".join(sentence.split()) in page.text, (where, sentence)
    for test, html_row, _, notes in _rates(run):
        assert _html_has_row(page, html_row), (where, html_row)
        for note in notes:
            assert note in page.text, (where, test["name"], note)
    for test in run["tests"]:
        assert test["name"] in page.text, (where, test["name"])
    empty = [t[0] for t, body in zip(page.tables, page.bodies) if body == 0]
    assert not empty, (where, "tables with no rows", empty)


def test_every_figure_is_on_the_run_page(made):
    _, runs, root = made
    for run in runs:
        page = _Page((root / "runs" / f"{run['id']}.html").read_text())
        _check_page(page, run, f"run page of {run['tests'][0]['name']}")


def test_every_figure_is_in_the_report(made):
    _, runs, _ = made
    for run in runs:
        _check_page(_Page(render_report([run])), run, f"report of {run['tests'][0]['name']}")


def test_the_report_sets_serving_runs_side_by_side(made):
    _, runs, _ = made
    serving = [r for r in runs if any(t["kind"] == "serve" and t["stats"] for t in r["tests"])][:4]
    page = _Page(render_report(serving))
    assert "Serving side by side" in page.text
    for run in serving:
        for test in run["tests"]:
            stats = test["stats"]
            if test["kind"] != "serve" or not stats:
                continue
            for figure in figures.SIDE_BY_SIDE:
                if figure.value(stats) is not None:
                    assert _html_has_row(page, [test["name"], f"{figure.label} {figure.unit}", figure.text(stats)]) \
                        or _html_has_row(page, [test["name"], f"{figure.label} "
                                                f"{figure.unit}"]), (test["name"], figure.key)
                    assert figure.text(stats) in page.text


def test_every_figure_is_in_pdx_show(made, monkeypatch):
    url, runs, _ = made
    monkeypatch.setenv("COLUMNS", "1000")  # every column fits; 80 columns is tests/test_terminal_width.py's
    for run in runs:
        shown = pdx_here("show", run["id"], "--registry", url)
        assert "left out at" not in shown
        rows, sentences = _expected(run)
        flat = " ".join(shown.split())
        for values in rows:
            assert _shown_has_row(shown, values), (run["tests"][0]["name"], values)
        for sentence in sentences:
            assert " ".join(sentence.split()) in flat, (run["tests"][0]["name"], sentence)
        for test, _, terminal_row, notes in _rates(run):
            assert _shown_has_row(shown, terminal_row), terminal_row
            for note in notes:
                assert note in flat, (test["name"], note)


def test_the_serving_table_names_each_unit(made, monkeypatch):
    url, runs, _ = made
    monkeypatch.setenv("COLUMNS", "1000")
    run = next(r for r in runs if any(t["kind"] == "serve" and (t["stats"] or {}).get("goodput") for t in r["tests"]))
    header = pdx_here("show", run["id"], "--registry", url).split("┡")[0]
    for unit in ("req/s", "tok/s", "ms"):
        assert unit in header
    lines = [" ".join(c.split()) for c in header.replace("┃", "│").split("\n")]
    assert any("TTFT p50" in line for line in lines) and any("goodput" in line for line in lines)


def test_a_busy_machine_is_named_beside_the_row_on_the_page(made):
    """Item 2 of issue 26: a rate at 6% of its ceiling, beside the other processes' core."""
    _, runs, root = made
    run = runs[0]
    test = run["tests"][0]
    assert test["conditions"]["other_cpu_cores"] == 1.27 and test["ceilings"]["fraction"] < 0.1
    page = _Page((root / "runs" / f"{run['id']}.html").read_text())
    row = next(r for t in page.tables for r in t if r and r[0] == test["name"])
    assert "other processes used 1.3 cores" in row[-1], row
    assert f"{test['name']} other processes 1.27 of 8 cores (pdx 0.98)" in page.text


class _Rendered:
    """What a browser shows of a page (``innerText``: no hidden element, no script, no SVG's own text
    counted twice), read as :class:`_Page` reads the HTML: its text, its tables' rows of cell texts,
    and the number of rows in each table's body. Folded parts (the conditions each test ran under) are
    unfolded first, as one click does: what must show without a click (a busy machine beside its row)
    has tests of its own."""

    _READ = """() => {
        document.querySelectorAll("details").forEach(d => { d.open = true; });
        const cells = row => [...row.cells].map(c => c.innerText.split(/\\s+/).filter(Boolean).join(" "));
        const tables = [...document.querySelectorAll("table")];
        return {text: document.body.innerText,
                tables: tables.map(t => [...t.rows].map(cells)),
                bodies: tables.map(t => [...t.tBodies].reduce((n, b) => n + b.rows.length, 0))};
    }"""

    def __init__(self, browser, path) -> None:
        page, problems = open_page(browser, path)
        try:
            read = page.evaluate(self._READ)
        finally:
            page.close()
        assert not problems, (path, problems)
        self.text = " ".join(read["text"].split())
        self.tables, self.bodies = read["tables"], read["bodies"]


@pytest.mark.browser
def test_every_figure_is_shown_by_a_browser_on_the_run_page_and_in_the_report(made, browser, tmp_path):
    """Issue 26's acceptance in Chromium: the run page and the report of each kind, rendered, show every
    stored headline figure as text, and no table is empty."""
    _, runs, root = made
    for run in runs:
        name = run["tests"][0]["name"]
        _check_page(_Rendered(browser, root / "runs" / f"{run['id']}.html"), run, f"run page of {name} in Chromium")
        report = tmp_path / f"{run['id']}.html"
        report.write_text(render_report([run]))
        _check_page(_Rendered(browser, report), run, f"report of {name} in Chromium")
