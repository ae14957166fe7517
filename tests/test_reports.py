"""pdx report and pdx publish on generated runs: what the pages hold, how the
site is laid out and kept up to date, and the errors a user can make.
(tests/test_browser.py opens a site of real llama.cpp runs in Chromium.)"""

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pdx.contract.errors import PdxError
from pdx.registry import Registry
from pdx.registry.where import parse_where
from pdx.reports import selection
from pdx.reports.report.single_file import write_report
from pdx.reports.site.builder import publish

from conftest import assert_one_line_error, run_pdx
from runfactory import START, add_run, fill, hardware, model
from pdx.reports.results import read_runs

XSS = "<script>alert(1)</script>"


@pytest.fixture
def registry(registry_url):
    return Registry(registry_url)


@pytest.fixture
def filled(registry):
    """12 runs: 2 machines x 2 models x 2 backends, the first four configurations twice."""
    return registry, fill(registry, 12, n_hardware=2, n_models=2)


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.scripts, self.styles = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "script":
            self.scripts.append(attrs.get("src"))
        if tag == "link":
            self.styles.append(attrs.get("href"))


def parse(path: Path) -> Links:
    parser = Links()
    parser.feed(path.read_text())
    return parser


def test_report_is_one_self_contained_file(filled, registry_url, tmp_path):
    registry, ids = filled
    out = tmp_path / "report.html"
    result = run_pdx("report", ids[0][:8], ids[4][:8], "-o", str(out), "--registry", registry_url)
    assert result.returncode == 0, result.stderr
    assert "2 runs" in result.stdout
    html = out.read_text()
    page = parse(out)
    assert page.styles == [] and page.scripts == [None]  # the stylesheet and the sort script are inline
    # Nothing loads from the network (links out to vendor datasheets are only links).
    assert not re.search(r"""src=["']?(https?:)?//""", html) and "url(" not in html
    assert html.count('<svg class="chart"') >= 2 and "tokens/s" in html
    assert all(link.startswith(("#run-", "https://")) for link in page.links)
    for run_id in (ids[0], ids[4]):
        assert f'id="run-{run_id}"' in html
    for test in ("pp512", "tg128@d4096", "tg128/b8"):
        assert test in html


def test_report_where_selects_and_names_the_selection(filled, registry_url, tmp_path):
    out = tmp_path / "r.html"
    result = run_pdx("report", "--where", "backend=llamacpp-python,hardware=M2", "-o", str(out),
                     "--registry", registry_url, "--title", "M2 only")
    assert result.returncode == 0, result.stderr
    html = out.read_text()
    assert "backend=llamacpp-python, hardware=M2" in html and "<title>M2 only" in html
    assert "Apple M3 Ultra" not in html and "Apple M2 Max" in html


def test_user_mistakes_are_one_line_errors(filled, registry_url, tmp_path):
    common = ("--registry", registry_url)
    assert_one_line_error(run_pdx("report", "--where", "backend=nope", *common), "no runs match backend=nope")
    assert_one_line_error(run_pdx("publish", str(tmp_path / "site"), "abcd1234", *common), "no run 'abcd1234'")
    assert not (tmp_path / "site").exists()
    if os.geteuid() == 0:
        unwritable = "/sys/pdx-site"  # sysfs refuses new folders even to root
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        unwritable = str(locked / "site")
    assert_one_line_error(run_pdx("publish", unwritable, *common), "cannot publish into")


def test_mistakes_name_what_was_wrong(filled, tmp_path):
    registry, _ = filled
    runs = read_runs(registry, samples=True)[:1]
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    cases = [
        (lambda: selection.select_runs(registry, where={"model": "nope"}), "no runs match model=nope"),
        (lambda: selection.select_runs(registry, ["ffffffff"]), "no run 'ffffffff'"),
        (lambda: selection.select_runs(Registry(str(tmp_path / "empty.sqlite"))), "holds no runs"),
        (lambda: write_report(runs, tmp_path / "no" / "r.html"), "does not exist"),
        (lambda: write_report(runs, tmp_path), "it is a folder"),
        (lambda: publish(runs, tmp_path / "no" / "site"), "does not exist"),
        (lambda: publish(runs, taken), "is not a folder"),
        (lambda: write_report(runs, tmp_path / "x.html", templates=tmp_path / "none"), "template folder"),
    ]
    for call, message in cases:
        with pytest.raises(PdxError, match=re.escape(message)) as caught:
            call()
        assert "\n" not in str(caught.value)


def test_where_parsing():
    assert parse_where(["backend=a,model=b c", "tag=x"]) == {"backend": "a", "model": "b c", "tag": "x"}
    for bad, message in ((["backend"], "not KEY=VALUE"), (["size=3"], "unknown key 'size'"),
                         (["tag=a", "tag=b"], "given twice")):
        with pytest.raises(PdxError, match=message):
            parse_where(bad)


def test_where_option_help_names_every_key():
    from pdx.cli.base import where_option
    from pdx.registry.where import WHERE_KEYS

    help_text = where_option(lambda: None).__click_params__[0].help
    assert help_text.split("keys: ")[1].split(" (")[0] == ", ".join(WHERE_KEYS)


def test_site_layout_links_and_data(filled, tmp_path):
    registry, ids = filled
    root = tmp_path / "site"
    result = publish(read_runs(registry, samples=True), root, title="Team results")
    pages = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html"))
    assert "index.html" in pages and "runs/index.html" in pages
    assert {f"runs/{i}.html" for i in ids} <= set(pages)
    assert len([p for p in pages if p.startswith("hardware/")]) == 2
    assert len([p for p in pages if p.startswith("models/")]) == 2
    assert len([p for p in pages if p.startswith("compare/")]) == 4  # the configurations run twice
    # A run's page links its configuration's runs through the runs list (it cannot know the rest).
    links = parse(root / "runs" / f"{ids[0]}.html").links
    assert any(h.startswith("../runs/index.html#hardware=") and "&model=" in h and "&backend=" in h
               for h in links), links
    assert result.pages == len(pages)
    for page in pages:
        path = root / page
        data = json.loads(path.with_suffix(".json").read_text())  # the JSON each page was made from
        assert data["schema"] == "pdx-site/2"
        parsed = parse(path)
        assert parsed.styles and all((path.parent / href).resolve().is_file() for href in parsed.styles)
        for href in parsed.links:
            target = href.split("#")[0]
            if target and not href.startswith("https://"):  # vendor datasheets behind the ceilings
                assert (path.parent / target).resolve().is_file(), f"{page} links to missing {href}"
        assert f"pdx {__import__('pdx').__version__}" in path.read_text()  # the footer names pdx
    index = json.loads((root / "index.json").read_text())
    assert index["headline_tests"] == {"prefill": "pp512", "decode": "tg128"}
    assert len(index["leaderboard"]) == 8
    row = index["leaderboard"][0]
    assert row["decode"]["test"] == "tg128" and row["decode"]["rate"] > 0 and row["decode"]["run"] in ids
    assert json.loads((root / f"runs/{ids[0]}.json").read_text())["run"]["tests"][0]["samples"]
    assert (root / "DATA.md").read_text().startswith("# ")
    html = (root / "index.html").read_text()
    assert html.count('<svg class="chart"') == 1 and "Apple M2 Max" in html


def test_republishing_updates_in_place_and_writes_nothing_outside(filled, tmp_path):
    registry, ids = filled
    parent = tmp_path / "pub"
    parent.mkdir()
    root = parent / "site"
    publish(read_runs(registry, samples=True), root)
    (root / "CNAME").write_text("results.example\n")  # a file of the user's own
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    again = publish(read_runs(registry, samples=True), root)
    assert again.changed == [] and again.removed == []
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()} == stamps
    fewer = publish(read_runs(registry, backend="llamacpp-bench", samples=True), root)
    gone = [i for i in ids if not (root / f"runs/{i}.html").exists()]
    assert len(gone) == 6 and f"runs/{gone[0]}.html" in fewer.removed and f"runs/{gone[0]}.json" in fewer.removed
    assert (root / "CNAME").read_text() == "results.example\n"
    assert sorted(p.name for p in parent.iterdir()) == ["site"]
    assert not list(root.rglob(".pdx-*"))  # no temporary file left behind


def test_republishing_without_title_keeps_the_site_s_name(filled, registry_url, tmp_path):
    """The title lives in the site's own manifest: `pdx publish` again without --title keeps it
    (it once renamed the site "pdx results"); --title renames it."""
    site = tmp_path / "site"

    def published(*title: str) -> tuple[str, str]:
        result = run_pdx("publish", str(site), "--registry", registry_url, *title)
        assert result.returncode == 0, result.stderr
        return json.loads((site / "index.json").read_text())["title"], (site / "index.html").read_text()

    assert published("--title", "Team results")[0] == "Team results"
    title, html = published()
    assert title == "Team results" and "<title>Team results" in html and "pdx results" not in html
    assert json.loads((site / "pdx-site.json").read_text())["title"] == "Team results"
    assert published("--title", "Lab B")[0] == "Lab B" and published()[0] == "Lab B"
    fresh = run_pdx("publish", str(tmp_path / "new"), "--registry", registry_url)
    assert fresh.returncode == 0 and json.loads((tmp_path / "new" / "index.json").read_text())["title"] == "pdx results"


def test_names_carrying_markup_render_as_text_everywhere(registry, tmp_path):
    import random

    hw = hardware(f"Chip {XSS}", 1)
    mdl = model(f"evil {XSS}", 7)
    for minutes in (0, 1):
        add_run(registry, hw, mdl, "llamacpp-bench", START.replace(minute=minutes), random.Random(minutes),
                tags=[XSS, 'a"b'])
    runs = read_runs(registry, samples=True)
    root = tmp_path / "site"
    publish(runs, root)
    from pdx.reports.report.single_file import write_report

    write_report(runs, tmp_path / "report.html")
    pages = [tmp_path / "report.html", *root.rglob("*.html")]
    assert len(pages) >= 6
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for page in pages:
        html = page.read_text()
        # The sort script; on "what to buy" its data and its script; on the runs list its data and filter.
        own = 3 if page.name == "buy.html" or page.relative_to(tmp_path).as_posix() == "site/runs/index.html" else 1
        assert "<script>alert" not in html and html.count("<script") == own, page
        # Every page names the runs' chip or model, but the sweeps list, which names sweeps (none here).
        assert escaped in html or "&amp;lt;script" in html or page.name == "sweeps.html", page
    # The filter's data is a script of JSON: the name is a JSON string there, read back exactly.
    search = (root / "runs" / "search.js").read_text()
    data = json.loads(search.removeprefix("window.PDX_RUNS = ").removesuffix(";\n"))
    assert {name for name, _ in data["models"]} == {f"evil {XSS}"} and [XSS, 'a"b'] in [r[8] for r in data["rows"]]
    charts = [svg for page in pages for svg in re.findall(r"<svg class=\"chart\".*?</svg>", page.read_text(), re.S)]
    assert charts and any(escaped in svg for svg in charts)  # the name is in the charts, as text
    assert all("<script" not in svg for svg in charts)


def test_templates_can_be_overridden_by_a_folder_and_by_a_plugin(filled, registry_url, tmp_path, monkeypatch):
    folder = tmp_path / "tpl"
    folder.mkdir()
    (folder / "_footer.html").write_text('<footer class="bottom">ACME benchmarks {{ site.version }}</footer>')
    out = tmp_path / "r.html"
    result = run_pdx("report", "-o", str(out), "--templates", str(folder), "--registry", registry_url)
    assert result.returncode == 0, result.stderr
    assert "ACME benchmarks" in out.read_text() and "Side by side" in out.read_text()

    from pdx import hookimpl
    from pdx.base import plugin_manager
    from pdx.reports.report.single_file import render_report

    plugin_dir = tmp_path / "plugin"
    plugin_dir.mkdir()
    (plugin_dir / "_footer.html").write_text("<footer>from a plugin</footer>")

    class Theme:
        @hookimpl
        def pdx_report_templates(self):
            return [str(plugin_dir)]

    plugin_manager.reset()
    plugin_manager.get_plugin_manager().register(Theme())
    try:
        runs = read_runs(filled[0], samples=True)[:1]
        assert "from a plugin" in render_report(runs)
        assert "ACME" in render_report(runs, templates=folder)  # the user's folder still comes first
    finally:
        plugin_manager.reset()


def test_the_data_layout_doc_names_every_field(filled, tmp_path):
    registry, _ = filled
    root = tmp_path / "site"
    publish(read_runs(registry, samples=True), root)
    doc = (root / "DATA.md").read_text()

    def keys(node, depth=0):
        if isinstance(node, dict) and depth < 4:
            for key, value in node.items():
                if not re.fullmatch(r"[0-9a-f]{8,}", key):  # ids used as keys are data, not fields
                    yield key
                yield from keys(value, depth + 1)
        elif isinstance(node, list) and node and depth < 4:
            yield from keys(node[0], depth)

    files = [root / "index.json", root / "runs" / "index.json", next(root.glob("runs/[0-9a-f]*.json")),
             next(root.glob("hardware/*.json")), next(root.glob("models/*.json")), next(root.glob("compare/*.json"))]
    skip = {"vega_lite"}  # a Vega-Lite spec is documented by Vega-Lite
    for path in files:
        data = json.loads(path.read_text())
        for chart in data.get("charts", []):
            chart.pop("vega_lite")
        missing = {k for k in keys(data) if f"`{k}`" not in doc} - skip
        assert not missing, f"{path.name}: {sorted(missing)} not in DATA.md"


def test_a_report_of_many_runs_leads_with_the_leaderboard(registry, monkeypatch):
    from pdx.reports.report import single_file as report

    fill(registry, 14, n_hardware=2, n_models=2)
    runs = read_runs(registry, samples=True)
    html = report.render_report(runs)
    assert "Leaderboard" in html and "Side by side" not in html and html.count('id="run-') == 14
    monkeypatch.setattr(report, "REPORT_LIMIT", 10)
    with pytest.raises(PdxError, match="14 runs are too many for one file"):
        report.render_report(runs)
