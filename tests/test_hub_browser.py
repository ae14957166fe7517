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
    assert page.eval_on_selector_all("#estimates tr", "rows => rows.length") == 3
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
    assert len(measured) == 3 and measured in (sorted(measured), sorted(measured, reverse=True))
    page.close()
