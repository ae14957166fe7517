"""``pdx publish``: a static site of runs, laid out by hardware, model and backend.

::

    index.html         the leaderboard (hardware x model x backend, pp and tg side by side)
    runs/index.html    every run (the newest listed, all filtered in the page: runs/search.js,
                       and in pages by id prefix: runs/ids/<xx>.json);  runs/<id>.html: one run in full
    hardware/<slug>.html, models/<slug>.html   one machine / one model across the rest
    compare/<slug>.html                        the runs of one configuration, newest vs previous
    assets/            the stylesheet, the sort script, and rendered charts by spec hash
    DATA.md            what each JSON file holds, field by field

Beside every page lies the JSON it was made from (``x.html`` -> ``x.json``).
Charts are rendered per page of a group, never per run, and each distinct
spec once (see :mod:`pdx.reports.charts.render`).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from pdx.registry.fields import TABLES
from pdx.reports import comparison, groups, labels, templating
from pdx.reports.site import pages
from pdx.reports.charts import runcharts
from pdx.reports.charts.render import ChartRenderer
from pdx.reports.rows import keeping_rows
from pdx.reports.site import pageset
from pdx.reports.site.leaderboard import board_note, leaderboard
from pdx.reports.site.runs import SiteRuns
from pdx.reports.site.writer import SiteWriter

SCHEMA = "pdx-site/2"
DATA_DOC = Path(__file__).with_name("site_data.md")
# Rendered charts by spec hash: publishing again re-renders only the charts whose data changed.
CHART_CACHE = "assets/charts"


def data_doc() -> str:
    """site_data.md, its rows of sample and request fields completed with any column of those tables
    they do not name (a field added to either table is documented by its column's comment)."""
    text = DATA_DOC.read_text()
    for level, (table, row_only) in TABLES.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{level}s` |"))
        extra = [f"`{c.name}` ({c.comment or 'no description'})" for c in table.__table__.columns
                 if c.name not in row_only and f"`{c.name}`" not in row]
        if extra:
            text = text.replace(row, row.rstrip(" |") + "; " + ", ".join(extra) + " |")
    return text


def json_text(data: dict) -> str:
    """A page's JSON (its data with the site's schema), as the site writes it."""
    # Compact: json's C encoder only runs without indent, and a site writes thousands of these.
    document = {"schema": SCHEMA, **data}
    try:
        return json.dumps(document, separators=(",", ":"), default=str, allow_nan=False) + "\n"
    except ValueError:  # NaN or an infinity, which JSON has no word for: null, as a missing figure
        return json.dumps(_finite(document), separators=(",", ":"), default=str, allow_nan=False) + "\n"


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


@dataclass
class PublishResult:
    root: Path
    pages: int = 0
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    charts: dict = field(default_factory=dict)
    runs: int = 0
    files_read: int | None = None  # of a results folder: the files read (the others as the last build had them)
    rejected: list[str] = field(default_factory=list)  # of a results folder: what verify rejected, left out


class PageRenderer:
    """Pages as text: what a process needs to render any page of a site. A run's page reads only
    the run and the site's title (it links its configuration's runs through the runs list), so the
    run pages of a large site render in other processes, before the rest of the site is known."""

    def __init__(self, info: dict, templates=None) -> None:
        self.info, self.templates = info, templates
        self.env = templating.environment(templates)

    def __getstate__(self) -> dict:
        return {k: v for k, v in vars(self).items() if k != "env"}  # a Jinja environment is made anew

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self.env = templating.environment(self.templates)

    def render(self, path: str, template: str, title: str, data: dict, shown: list[dict], compared=frozenset(),
               **context) -> list:
        """[(path, HTML), (its JSON's path, JSON)]: ``template`` rendered, ``data`` beside it;
        ``compared``: the configurations with a comparison page, which the page may link."""
        root = "../" * path.count("/")
        json_path = Path(path).with_suffix(".json")
        # The footer dates the page's own runs, so a new run leaves the pages it is not on unchanged.
        site = self.info | {"data_time": pages.data_time(shown), "n_runs": len(shown)}
        html = self.env.get_template(template).render(
            site=site, page={"title": title, "root": root, "json": json_path.name},
            links=pages.SiteLinks(root, compared), **context)
        return [(path, html), (json_path.as_posix(), json_text(data))]

    def run_page(self, run: dict) -> list:
        """The files of one run's page (the run with its samples and statistics)."""
        return self.render(f"runs/{run['id']}.html", "run.html", labels.run_label(run), {"run": run}, [run], run=run,
                           run_charts=runcharts.run_charts(run))


class SiteBuilder:
    """A site's build from ``site_runs`` (:class:`SiteRuns`, finished): what every page maker reads
    (the runs' groups, the leaderboard, the chart renderer) and writes through (:meth:`page`,
    :meth:`later`); each page's lists from every run's listing, its figures from the runs it kept whole.
    ``run_pages``: the runs whose own pages this builder renders (a results folder's are rendered as it
    is read). The pages are the registered page makers' (:mod:`pdx.reports.site.core_pages` and the rest)."""

    def __init__(self, site_runs: SiteRuns, writer: SiteWriter, title: str, templates=None,
                 run_pages: Sequence[dict[str, Any]] = ()) -> None:
        self.site_runs, self.writer, self.title, self.run_pages = site_runs, writer, title, run_pages
        self.runs, self.listed = site_runs.runs, site_runs.listed
        self.renderer = ChartRenderer()
        self.configs = site_runs.groups(groups.config_key)
        self.by_hardware = site_runs.groups(groups.hardware_key)
        self.by_model = site_runs.groups(groups.model_key)
        # A configuration has a comparison page where two of its runs share a test (comparison.comparable_pair).
        self.pairs = {k: pair for k, g in self.configs.items()
                      if len(g.every) > 1 and (pair := comparison.comparable_pair(g.runs))}
        self.compared = frozenset(self.pairs)
        self.info = pages.site_info(title, self.listed, inline=False)
        self.headline = site_runs.headline
        self.page_renderer = PageRenderer(self.info, templates)
        self.env = self.page_renderer.env
        self.pages = 0
        self.files_read: int | None = None
        self.deferred: list = []  # pages waiting for their charts

    def links(self, root: str) -> pages.SiteLinks:
        return pages.SiteLinks(root, self.compared)

    def later(self, *args, **context) -> None:
        """A page with charts: written once every chart of the site is rendered."""
        self.deferred.append((args, context))

    def page(self, path: str, template: str, title: str, data: dict, **context) -> None:
        """Render ``template`` to ``path`` and write ``data`` beside it as JSON; ``runs``: the listings
        of the page's runs (its footer counts and dates them)."""
        shown = context.get("runs") or ([context["run"]] if "run" in context else self.listed)
        context.setdefault("headline", self.headline)
        self.write_files(self.page_renderer.render(path, template, title, data, shown, self.compared, **context))

    def write_files(self, files: list) -> None:
        """Write one page's files (:meth:`PageRenderer.render`'s list)."""
        for path, text in files:
            self.writer.write(path, text)
        self.pages += 1

    def full(self, run: dict) -> dict:
        """The run with its samples, for the pages that read them (its own, a comparison)."""
        return run

    def write_run_pages(self) -> None:
        """Every run's own page (a results folder's builder moves the pages it staged into place)."""
        for run in self.run_pages:
            self.write_files(self.page_renderer.run_page(run))

    def board(self, runs: list[dict], root: str) -> tuple[list[dict], str | None]:
        """The leaderboard of the configurations of ``runs`` and its note (:func:`board_note`)."""
        # The site's own groups: a configuration on the index's board and on its machine's and model's
        # finds its best runs once (Group.headline keeps them).
        configs = [self.configs[k] for k in dict.fromkeys(groups.config_key(r) for r in runs)]
        board = leaderboard(configs, self.headline, self.links(root))
        return board, board_note(configs, board)

    def build(self) -> None:
        """Every registered page (:mod:`pdx.reports.site.pageset`): first those with charts, whose
        charts then render in worker processes while this process writes the rest."""
        pageset.build_pages(self, "charts")
        for key in self.renderer.pending:
            cached = self.writer.read_previous(f"{CHART_CACHE}/{key}.svg")
            if cached:
                self.renderer.preload(key, cached)
        self.renderer.start()
        self.writer.write("assets/pdx.css", self.env.get_template("pdx.css").render())
        self.writer.write("assets/sort.js", self.env.get_template("sort.js").render())
        self.writer.write("assets/runs.js", self.env.get_template("runs.js").render())
        self.writer.write("DATA.md", data_doc())
        pageset.build_pages(self, "pages")
        self.renderer.wait()
        for key, svg in self.renderer.all_svgs().items():
            self.writer.write(f"{CHART_CACHE}/{key}.svg", str(svg))
        for args, context in self.deferred:
            self.page(*args, **context)


def publish(runs: list[dict], root: str | os.PathLike, title: str | None = None,
            templates: str | os.PathLike | None = None) -> PublishResult:
    """Build the site of ``runs`` (with their statistics, each id once) into ``root``; ``title``
    None: the one the site has, else pdx's default (:meth:`SiteWriter.site_title`)."""
    site_runs = SiteRuns()
    for run in runs:
        site_runs.add(run)
    site_runs.finish()
    return build_site(root, lambda writer: SiteBuilder(site_runs, writer, writer.site_title(title), templates,
                                                       run_pages=runs))


def build_site(root: str | os.PathLike, make_builder) -> PublishResult:
    """Build a site into ``root`` with the :class:`SiteBuilder` that ``make_builder(writer)`` returns
    (a results folder's reads its runs through the writer: :mod:`pdx.reports.hub.bundle_site`). A build
    that stops is recorded so that the next one may replace what it wrote (:meth:`SiteWriter.abandon`)."""
    started = time.perf_counter()
    writer = SiteWriter(root)
    try:
        with keeping_rows():
            builder = make_builder(writer)
            builder.build()
    except BaseException:
        writer.abandon()
        raise
    about = {"title": builder.title, "pdx_version": builder.info["version"], "data_time": builder.info["data_time"],
             "runs": len(builder.listed)}
    removed = writer.finish(about)
    return PublishResult(writer.root, builder.pages, writer.changed, removed, time.perf_counter() - started,
                         builder.renderer.stats, len(builder.listed), builder.files_read)
