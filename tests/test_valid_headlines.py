"""Headlines only from valid runs: a registry holding one valid run and one newer, faster run that
reads about 108% of its ceiling (stored through the registry and judged by the real ceilings code, as
pdx bench stores one: tests/runfactory.py; within the 10% `pdx hub verify` lets through, so the hub
holds it too, and subtler than the 146% a loaded probe gave). The report, the site, the hub built from submitted
bundles and "what to buy" all name the valid run as the best and say one run was left out and
why; `pdx submit` refuses the ABOVE run. Read as a person reads them: the pages' text and links,
the terminal's words."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from html.parser import HTMLParser

import pytest

from pdx.domain import headline
from pdx.registry import Registry
from pdx.domain.workload import TestSpec

from conftest import run_pdx_here
from runfactory import START, add_run, hardware, model

LEFT_OUT = "1 run left out: above its ceiling"


class _Page(HTMLParser):
    """A page's visible text, the links of its leaderboard table, and the columns of the bold (best)
    figures of its side-by-side table (a report's few runs: 0 is the first run's)."""

    def __init__(self) -> None:
        super().__init__()
        self.words: list[str] = []
        self.board_links: list[str] = []
        self.best_columns: set[int] = set()
        self._skip = 0
        self._tables: list[str] = []  # each open table's class
        self._column = -1

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "style"):
            self._skip += 1
        if tag == "table":
            self._tables.append(attrs.get("class") or "")
        inside = self._tables[-1] if self._tables else ""
        if tag == "a" and "leaderboard" in inside and attrs.get("href"):
            self.board_links.append(attrs["href"])
        if tag == "tr":
            self._column = -1
        if tag in ("td", "th"):
            self._column += 1
        if tag == "strong" and inside.split()[-1:] == ["matrix"]:
            self.best_columns.add(self._column - 2)  # after the test and phase columns

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        if tag == "table" and self._tables:
            self._tables.pop()

    def handle_data(self, data):
        if not self._skip:
            self.words.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.words).split())


def _read(path) -> _Page:
    page = _Page()
    page.feed(path.read_text())
    return page


@pytest.fixture
def registry(tmp_path) -> tuple[str, str, str]:
    """(url, valid run, ABOVE run) of one configuration on a catalog machine."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    store = Registry(url)
    machine, mdl, rng = hardware("Apple M2 Max", 0), model("llama-0-8b-q4_0", 1), random.Random(3)
    tests = [TestSpec(512, 0), TestSpec(0, 128)]
    valid = add_run(store, machine, mdl, "llamacpp-bench", START, rng, tests=tests, share=0.6)
    above = add_run(store, machine, mdl, "llamacpp-bench", START + timedelta(hours=1), rng, tests=tests, share=1.08)
    stored = store.get_run(above)
    assert all(t["ceilings"]["above_ceiling"] for t in stored["tests"])  # flagged by the ceilings, as bench does
    store.close()
    return url, valid, above


def test_the_rule_names_the_above_run_only(registry):
    from pdx.reports.results import read_run

    url, valid, above = registry
    store = Registry(url)
    assert headline.left_out(read_run(store, valid)) is None
    assert headline.left_out(read_run(store, above)) == headline.ABOVE
    store.close()
    assert headline.left_out_note([headline.ABOVE, None]) == LEFT_OUT
    assert headline.left_out_note([headline.ABOVE, headline.NOISY, headline.NOISY]) == \
        "3 runs left out: 2 noisy, 1 above its ceiling"


def test_report_site_hub_and_what_to_buy_take_the_valid_run(registry, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    url, valid, above = registry

    report = tmp_path / "report.html"
    done = run_pdx_here("report", "--registry", url, "-o", str(report))
    assert done.returncode == 0, done.stderr
    page = _read(report)
    # Two runs: side by side, newest (the ABOVE run) first; the best of each line is the valid run's.
    assert page.best_columns == {1}
    assert "left out: above its ceiling" in page.text and LEFT_OUT in page.text

    site = tmp_path / "site"
    done = run_pdx_here("publish", str(site), "--registry", url)
    assert done.returncode == 0, done.stderr
    _check_site(site, valid, above)

    # The hub: submit refuses the ABOVE run, and says why; forced in, the hub's pages still leave it out.
    folder = tmp_path / "results"
    refused = run_pdx_here("submit", "--registry", url, "-o", str(folder), above)
    assert refused.returncode == 1 and "test tg128 is above its ceiling" in refused.stderr
    assert run_pdx_here("submit", "--registry", url, "-o", str(folder), valid).returncode == 0
    assert run_pdx_here("submit", "--registry", url, "-o", str(folder), above, "--force").returncode == 0
    hub = tmp_path / "hub"
    done = run_pdx_here("publish", str(hub), "--bundles", str(folder), "--title", "hub")
    assert done.returncode == 0, done.stderr
    _check_site(hub, valid, above)


def _check_site(site, valid: str, above: str) -> None:
    index = _read(site / "index.html")
    assert f"runs/{valid}.html" in index.board_links and f"runs/{above}.html" not in index.board_links
    assert LEFT_OUT in index.text and "Headline tests: pp512 (prefill), tg128 (decode)" in index.text
    data = json.loads((site / "index.json").read_text())
    (entry,) = data["leaderboard"]
    assert entry["decode"]["run"] == entry["prefill"]["run"] == valid and data["left_out"] == LEFT_OUT

    buy = json.loads((site / "buy.json").read_text())
    (machine,) = buy["models"][0]["machines"]
    assert machine["run"] == valid and buy["left_out"] == LEFT_OUT
    assert LEFT_OUT in _read(site / "buy.html").text

    chips = json.loads((site / "chips.json").read_text())
    assert [row["run"] for row in chips["rows"]] == [valid] and LEFT_OUT in _read(site / "chips.html").text

    (hardware_page,) = (site / "hardware").glob("*.html")
    shown = _read(hardware_page)
    assert f"../runs/{valid}.html" in shown.board_links and LEFT_OUT in shown.text


def test_an_index_without_headline_tests_says_so(tmp_path):
    """Runs of deep-context tests only: no headline test, said in words, and no row of dashes."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    store = Registry(url)
    add_run(store, hardware("Apple M2 Max", 0), model("m", 1), "llamacpp-bench", START, random.Random(1),
            tests=[TestSpec(0, 128, depth=4096)])
    store.close()
    assert run_pdx_here("publish", str(tmp_path / "site"), "--registry", url).returncode == 0
    index = _read(tmp_path / "site" / "index.html")
    assert "Headline tests: ;" not in index.text and "No run has a pp or tg test at depth 0, batch 1" in index.text
    assert json.loads((tmp_path / "site" / "index.json").read_text())["leaderboard"] == []
    assert "1 configuration without a pp or tg test at depth 0, batch 1 not listed" in index.text


MS = 1_000_000


def _serve_test(first_ms: list[int], tokens: int = 10, gap_ms: int = 90, failed: int = 0,
                scenario: str = "load") -> dict:
    """A serving test of requests all sent at 0, each first token at ``first_ms`` and then ``tokens``
    - 1 more every ``gap_ms``, with its statistics derived as every reader derives them."""
    from pdx.domain.serving.records import RequestRecord
    from pdx.reports.results import derive_stats

    records = []
    for idx, first in enumerate(first_ms):
        events = [((first + gap_ms * k) * MS, 1) for k in range(tokens)]
        records.append(RequestRecord(idx=idx, n_prompt=64, max_tokens=tokens, role="load", send_ns=0,
                                     first_ns=first * MS, end_ns=events[-1][0], events=events,
                                     status="error" if idx < failed else "ok"))
    test = {"name": "c8:p64+g10:n8", "kind": "serve", "status": "ok", "spec": {"scenario": scenario},
            "requests": [r.to_dict() for r in records],
            "samples": [{"ns": max(r.end_ns for r in records)}]}
    return test | {"stats": derive_stats(test)}


def test_a_queued_serving_run_is_overloaded_a_parallel_one_is_not():
    """One slot for eight requests sent at once: each waits for those before it (median TTFT 36x the
    first's, most of its E2EL): overloaded, no headline, refused by submit; eight slots: valid."""
    from pdx.api.contrib.submit import refusals

    queued = _serve_test([100 + 1000 * i for i in range(8)])
    kind, words = headline.problem_of(queued)
    assert kind == headline.OVERLOADED and "requests queued: median TTFT 3.6 s is 36x the fastest" in words
    run = {"status": "complete", "tests": [queued], "model": {"sha256": "ab" * 32, "extra": {}},
           "hardware": {"id": "x"}, "ceiling_basis": None}
    assert any("is overloaded: requests queued" in reason for reason in refusals(run, 0.05))
    assert headline.left_out(run) == headline.OVERLOADED
    assert headline.problem_of(_serve_test([100 + 5 * i for i in range(8)])) is None
    assert headline.problem_of(_serve_test([100] * 8, failed=2))[1].endswith("2 of 8 requests failed")
    # A capacity search pushes past the knee on purpose: judged by its own figures, not this rule.
    assert headline.problem_of(_serve_test([100 + 1000 * i for i in range(8)], scenario="capacity")) is None


def test_runs_whose_tool_named_no_machine_get_no_hardware_page(tmp_path):
    """`vllm bench serve`'s printed summary names no machine: its run is listed, but on no hardware or
    chip page, and the index says how many such runs there are instead of listing a pseudo-machine."""
    from pathlib import Path

    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    printed = Path(__file__).with_name("data") / "vllm_bench_serve_printed_issue9722.txt"
    imported = run_pdx_here("import", str(printed), "--registry", url)
    assert imported.returncode == 0, imported.stderr
    site = tmp_path / "site"
    assert run_pdx_here("publish", str(site), "--registry", url).returncode == 0
    assert not list((site / "hardware").glob("*.html")) and not list((site / "chips").glob("*.html"))
    index = _read(site / "index.html")
    assert "not recorded by the tool" not in index.text.split("Models")[0].split("Hardware")[1]
    assert "1 imported run whose tool named no machine is on no hardware page" in index.text
    data = json.loads((site / "index.json").read_text())
    assert data["hardware"] == [] and data["runs_without_hardware"] == 1
    assert "hardware/" not in (site / "runs" / "search.js").read_text()
