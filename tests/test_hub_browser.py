"""The "what to buy" page in headless Chromium: it recomputes when a workload field changes,
and its figures are the hand calculation from the stored pp/tg samples (tests/test_hub.py
has that calculation and the two contributors' results repository)."""

from __future__ import annotations

import pytest
from test_browser import browser, open_page  # noqa: F401  (the Chromium fixture, and the page opener)
from test_hub import _m2_max, _published, hand_estimate, model, repo  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser


def _row(page, hardware: str) -> dict:
    return page.eval_on_selector_all(
        "#estimates tr", """(rows, name) => {
            const row = rows.find(r => r.querySelector('td a').textContent === name);
            const v = cls => Number(row.querySelector('td.' + cls).getAttribute('data-v'));
            return {ttft: v('ttft'), perRequest: v('per-request'), aggregate: v('aggregate'), total: v('total'),
                    dominant: row.querySelector('td.dominant').textContent};
        }""", hardware)


def _set(page, **fields) -> None:
    for name, value in fields.items():
        page.fill(f"#workload input[name={name}]", str(value))


def test_what_to_buy_recomputes_and_matches_a_hand_calculation(repo, tmp_path, browser):  # noqa: F811
    site = tmp_path / "site"
    _published(repo, site)
    record = _m2_max(repo)
    page, problems = open_page(browser, site / "buy.html")
    # bob's llama-bench table is noisy: no estimate from it (tests/test_hub.py says the page says so)
    assert page.eval_on_selector_all("#estimates tr", "rows => rows.length") == 2
    first = _row(page, "Apple M2 Max")
    want = hand_estimate(record, 512, 128, 0, 1)
    for key in ("ttft", "perRequest", "aggregate", "total"):
        assert first[key] == pytest.approx(want[key], rel=1e-9), key
    _set(page, prompt=2000, output=300, depth=1500)
    changed = _row(page, "Apple M2 Max")
    want = hand_estimate(record, 2000, 300, 1500, 1)
    assert changed["ttft"] != first["ttft"]
    for key in ("ttft", "perRequest", "total"):
        assert changed[key] == pytest.approx(want[key], rel=1e-9), key
    _set(page, concurrency=4)
    batched = _row(page, "Apple M2 Max")
    want = hand_estimate(record, 2000, 300, 1500, 4)
    assert batched["aggregate"] == pytest.approx(want["aggregate"], rel=1e-9)
    assert batched["dominant"] == want["dominant"]
    assert not problems, problems
    page.close()


def test_the_hub_pages_load_without_errors_and_their_links_resolve(repo, tmp_path, browser):  # noqa: F811
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    site = tmp_path / "site"
    _published(repo, site)
    pages = [site / "chips.html", site / "buy.html", *sorted(site.glob("chips/*.html"))]
    assert len(pages) == 5
    for path in pages:
        page, problems = open_page(browser, path)
        assert not problems, f"{path.name}: {problems}"
        for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
            url = urlparse(href)
            if url.scheme in ("http", "https"):
                continue  # the catalog's sources for a chip's figures
            assert Path(unquote(url.path)).is_file(), f"{path.name} links to missing {href}"
        page.close()
    page, _ = open_page(browser, site / "chips.html")
    page.click("table.chips th:nth-child(6)")  # sort by measured tg128
    measured = page.eval_on_selector_all("table.chips tbody td:nth-child(6)",
                                         "tds => tds.map(td => Number(td.getAttribute('data-v')))")
    assert len(measured) == 2 and measured in (sorted(measured),
                                               sorted(measured, reverse=True))  # bob's noisy one left out
    page.close()


@pytest.fixture(scope="module")
def big_site(tmp_path_factory):
    """A site of 260 runs: more than the runs page lists (pdx.reports.site.pages.RUNS_SHOWN)."""
    import json

    import runfactory
    from pdx.registry.hub_folder import file_name
    from pdx.registry import Registry, bundle
    from pdx.registry.redact import redact_record
    from pdx.api.contrib.publish import publish_bundles

    scratch = tmp_path_factory.mktemp("big")
    registry = Registry(f"sqlite:///{scratch / 'r.sqlite'}")
    try:
        records = registry.records(runfactory.fill(registry, 260, n_hardware=4, n_models=3, repetitions=2))
    finally:
        registry.close()
    (scratch / "runs").mkdir()
    for record in map(redact_record, records):  # a results folder takes redacted runs only
        (scratch / "runs" / file_name(record)).write_text(json.dumps(bundle.make_bundle([record])))
    publish_bundles(scratch / "runs", scratch / "site")
    return scratch / "site"


def _search_data(site) -> dict:
    import json

    text = (site / "runs" / "search.js").read_text()
    return json.loads(text.removeprefix("window.PDX_RUNS = ").removesuffix(";\n"))


def _shown(page) -> list[list[str]]:
    return page.eval_on_selector_all("table.runs tbody tr",
                                     "rows => rows.map(r => Array.from(r.cells, c => c.textContent))")


def test_the_runs_filter_reaches_every_run_and_its_address_links_the_view(big_site, browser):  # noqa: F811
    data = _search_data(big_site)
    columns = {name: i for i, name in enumerate(data["columns"])}
    page, problems = open_page(browser, big_site / "runs" / "index.html")
    assert len(_shown(page)) == 200 and len(data["rows"]) == 260
    oldest = data["rows"][-1][columns["id"]]  # not among the rows the page lists
    assert oldest[:12] not in {row[0] for row in _shown(page)}
    page.fill("#run-search", oldest[:10])
    page.wait_for_function("document.querySelectorAll('table.runs tbody tr').length === 1")
    assert _shown(page)[0][0] == oldest[:12] and f"q={oldest[:10]}" in page.url
    assert page.text_content("#run-count").startswith("1 of 1 matching")

    # A machine's name: every run of it, beyond the 200 the page lists, sorted by decode rate.
    label, _ = data["hardware"][0]
    page.fill("#run-search", "")
    page.click("table.runs th:nth-child(11)")  # decode, fastest first
    mine = [r for r in data["rows"] if data["hardware"][r[columns["hardware"]]][0] == label]
    from urllib.parse import urlencode

    linked = (big_site / "runs" / "index.html").as_uri() + "#" + urlencode({"hardware": label, "sort": "decode",
                                                                         "dir": "descending"})
    other, more = open_page(browser, big_site / "runs" / "index.html")
    other.goto(linked)
    other.wait_for_function(f"document.querySelectorAll('table.runs tbody tr').length === {len(mine)}")
    rows = _shown(other)
    assert {r[3] for r in rows} == {label}
    fastest = sorted((r[columns["decode"]] for r in mine), reverse=True)
    shown_decode = [float(r[10].replace(",", "")) for r in rows]
    assert shown_decode == pytest.approx(fastest, rel=0.01)
    assert other.get_attribute("table.runs th:nth-child(11)", "aria-sort") == "descending"
    assert not problems and not more, problems + more
    page.close()
    other.close()


def test_a_chip_page_links_every_run_on_it(big_site, browser):  # noqa: F811
    chip = sorted((big_site / "chips").glob("*.html"))[0]
    page, problems = open_page(browser, chip)
    listed = page.eval_on_selector_all("table.chip-runs tbody tr", "rows => rows.length")
    link = page.get_attribute("a:has-text('in the runs list')", "href") or page.get_attribute(
        "a:has-text('These runs in the runs list')", "href")
    page.goto(page.url.rsplit("/", 2)[0] + "/" + link.removeprefix("../"))
    total = sum(1 for _ in page.eval_on_selector_all("table.runs tbody tr", "rows => rows.map(r => 1)"))
    data = _search_data(big_site)
    label = page.eval_on_selector("table.runs tbody tr td:nth-child(4)", "td => td.textContent")
    on_it = sum(1 for r in data["rows"] if data["hardware"][r[data["columns"].index("hardware")]][0] == label)
    assert listed == total == on_it > 60  # 260 runs over 4 machines: all of them in both
    assert not problems, problems
    page.close()
