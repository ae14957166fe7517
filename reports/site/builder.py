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

from pdx.registry.fields import TABLES
from pdx.reports import comparison, groups, labels, templating
from pdx.reports.site import pages
from pdx.reports.charts import runcharts
from pdx.reports.charts.chartset import charts_for
from pdx.reports.charts.render import ChartRenderer
from pdx.reports.hub import hubdata
from pdx.reports.site.pages import RUNS_SHOWN
from pdx.reports.rows import keeping_rows
from pdx.reports.site import pageset
from pdx.reports.site.leaderboard import board_note, leaderboard, leaderboard_chart, public
from pdx.reports.site.runs import SiteRuns
from pdx.reports.site.writer import SiteWriter

SCHEMA = "pdx-site/2"
DATA_DOC = Path(__file__).with_name("site_data.md")
RECENT_RUNS = 25
SEARCH_COLUMNS = ["id", "created_at", "status", "hardware", "model", "backend", "threads", "tests", "tags",
                  "prefill", "decode"]
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


def _json(data: dict) -> str:
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
        return [(path, html), (json_path.as_posix(), _json(data))]

    def run_page(self, run: dict) -> list:
        """The files of one run's page (the run with its samples and statistics)."""
        return self.render(f"runs/{run['id']}.html", "run.html", labels.run_label(run), {"run": run}, [run], run=run,
                           run_charts=runcharts.run_charts(run))


class SiteBuilder:
    """Every page of a site but the runs' own from ``site_runs`` (:class:`SiteRuns`, finished): its
    lists from every run's listing, its figures from the runs it kept whole. ``run_pages``: the runs
    whose own pages this builder renders (a results folder's are rendered as it is read)."""

    def __init__(self, site_runs: SiteRuns, writer: SiteWriter, title: str, templates=None,
                 run_pages: list[dict] = ()) -> None:
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
        # Pages with charts first, so the charts render in worker processes while this
        # process writes the run and comparison pages.
        for group in self.by_hardware.values():
            if not groups.hardware_recorded(group.latest):
                continue  # runs that name no machine are no machine's: no page, counted on the index
            self.group_page("hardware", groups.hardware_slug(group.latest), labels.hardware_label(group.latest),
                            group, lambda r: f"{r['model']['name']} · {r['backend']}",
                            {"hardware": group.latest["hardware"]})
        for group in self.by_model.values():
            self.group_page("models", groups.model_slug(group.latest), group.latest["model"]["name"], group,
                            labels.system_threads_label, {"model": group.latest["model"]})
        self.index()
        for key in self.renderer.pending:
            cached = self.writer.read_previous(f"{CHART_CACHE}/{key}.svg")
            if cached:
                self.renderer.preload(key, cached)
        self.renderer.start()
        self.writer.write("assets/pdx.css", self.env.get_template("pdx.css").render())
        self.writer.write("assets/sort.js", self.env.get_template("sort.js").render())
        self.writer.write("assets/runs.js", self.env.get_template("runs.js").render())
        self.writer.write("DATA.md", data_doc())
        pageset.build_pages(self)  # pdx's hub pages, then any plugin's (pdx_register_pages)
        self.write_run_pages()
        self.runs_index()
        for key in self.compared:
            self.compare_page(self.configs[key])
        self.renderer.wait()
        for key, svg in self.renderer.all_svgs().items():
            self.writer.write(f"{CHART_CACHE}/{key}.svg", str(svg))
        for args, context in self.deferred:
            self.page(*args, **context)

    def runs_index(self) -> None:
        """The list of every run: its newest :data:`RUNS_SHOWN` in the page, all of them in
        ``runs/search.js`` for the page's filter and sort, and in ``runs/ids/<xx>.json`` by the
        first two digits of their ids (a new run changes one of those files, whatever its date)."""
        buckets: dict[str, list[dict]] = {}
        for listed in self.listed:
            buckets.setdefault(listed["id"][:2], []).append(listed)
        for prefix, listed in sorted(buckets.items()):  # a bucket's summaries at a time: a site's are many
            self.writer.write(f"runs/ids/{prefix}.json",
                              _json({"prefix": prefix, "runs": [_run_summary(r) for r in listed]}))
        self.writer.write("runs/search.js", search_script(self.listed))
        pages_ = [{"prefix": p, "path": f"runs/ids/{p}.json", "runs": len(v)} for p, v in sorted(buckets.items())]
        data = {"total": len(self.listed), "runs": [_run_summary(r) for r in self.listed[:RUNS_SHOWN]],
                "pages": pages_}
        self.page("runs/index.html", "runs.html", "All runs", data, runs=self.listed, newest=self.listed[:RUNS_SHOWN])

    def group_page(self, folder: str, slug: str, title: str, group: groups.Group, namer, about: dict) -> None:
        root = "../"
        board, note = self.board(group.runs, root)
        charts = charts_for(group.runs, self.renderer, namer, self.headline, per_test=False)
        data = {**about, "leaderboard": public(board), "left_out": note, "runs": [r["id"] for r in group.every],
                "charts": [c.to_dict() for c in charts]}
        self.later(f"{folder}/{slug}.html", "group.html", title, data, kind=folder, about=about, board=board,
                   board_note=note,
                   charts=charts, runs=group.every, recent=group.every[:RECENT_RUNS])

    def compare_page(self, config: groups.Group) -> None:
        """The newest run that shares a test with an earlier one against the newest such earlier run
        (:func:`comparison.comparable_pair`; the newest two, unless one of them measured nothing the
        other did); no rendered charts (a site has one such page per configuration of two runs or
        more), the change drawn in the table instead."""
        paired = self.pairs[config.key]
        ids = [r["id"] for r in config.every]  # newest first, as the pair was sought
        passed = [r for r in config.every[:ids.index(paired[1]["id"])] if r["id"] != paired[0]["id"]]
        new, base = self.full(paired[0]), self.full(paired[1])
        lines = comparison.compare(base, new)
        differences = comparison.differences(base, new)
        data = {"baseline": base["id"], "new": new["id"], "tests": [line.to_dict() for line in lines],
                "differences": differences, "runs": [_run_summary(r) for r in config.every]}
        title = labels.system_label(new, with_model=True)
        data["passed_over"] = [r["id"] for r in passed]
        self.page(f"compare/{groups.config_slug(new)}.html", "compare.html", title, data, base=base, new=new,
                  lines=lines, differences=differences, runs=config.every, charts=[], listed=RECENT_RUNS,
                  passed_over=passed)

    def index(self) -> None:
        board, note = self.board(self.runs, "")
        chart = leaderboard_chart(board, self.renderer)
        hardware = [_entry(g, groups.hardware_slug, labels.hardware_label, "hardware")
                    for g in self.by_hardware.values() if groups.hardware_recorded(g.latest)]
        unrecorded = sum(len(g.every) for g in self.by_hardware.values() if not groups.hardware_recorded(g.latest))
        models = [_entry(g, groups.model_slug, lambda r: r["model"]["name"], "models")
                  for g in self.by_model.values()]
        compared = [{"title": labels.system_label(g.latest, with_model=True), "page": f"compare/{groups.config_slug(g.latest)}.html",
                     "runs": len(g.every), "latest": g.latest["created_at"]}
                    for k, g in self.configs.items() if k in self.compared]
        data = {"title": self.title, "pdx_version": self.info["version"], "data_time": self.info["data_time"],
                "headline_tests": self.headline, "leaderboard": public(board), "left_out": note, "hardware": hardware,
                "runs_without_hardware": unrecorded,
                "models": models,
                "comparisons": compared, "charts": [chart.to_dict()] if chart else []}
        self.later("index.html", "index.html", self.title, data, board=board, board_note=note, board_chart=chart,
                   hardware=hardware, unrecorded=unrecorded,
                  models=models, comparisons=compared, recent=self.listed[:RECENT_RUNS], runs=self.listed)


def _entry(group: groups.Group, slugger, namer, folder: str) -> dict:
    run = group.latest
    return {"name": namer(run), "page": f"{folder}/{slugger(run)}.html", "runs": len(group.every),
            "models": len({groups.model_key(r) for r in group.every}),
            "hardware": len({groups.hardware_key(r) for r in group.every}),
            "backends": sorted({r["backend"] for r in group.every}), "latest": run["created_at"]}


def search_script(runs: list[dict]) -> str:
    """``runs/search.js``: every run as one compact row for the runs page's filter and sort, names
    and pages of machines and models once each (a script, not JSON to fetch: a site opened from
    ``file://`` may not fetch)."""
    tables: dict[str, dict] = {"hardware": {}, "models": {}}
    rows = []
    for run in runs:
        hardware = tables["hardware"].setdefault(groups.hardware_key(run), [
            len(tables["hardware"]), labels.hardware_label(run),
            f"hardware/{groups.hardware_slug(run)}.html" if groups.hardware_recorded(run) else None])
        model = tables["models"].setdefault(groups.model_key(run), [
            len(tables["models"]), run["model"]["name"], f"models/{groups.model_slug(run)}.html"])
        prefill, decode = hubdata.headline_rates(run)
        rows.append([run["id"], run["created_at"], run["status"], hardware[0], model[0], run["backend"],
                     run.get("threads"), len(run["tests"]), run["tags"], prefill, decode])
    data = {"schema": SCHEMA, "columns": SEARCH_COLUMNS, "rows": rows,
            **{name: [entry[1:] for entry in table.values()] for name, table in tables.items()}}
    return "window.PDX_RUNS = " + _json(data).rstrip("\n") + ";\n"


def _run_summary(run: dict) -> dict:
    return {"id": run["id"], "page": f"runs/{run['id']}.html", "created_at": run["created_at"],
            "status": run["status"], "hardware": labels.hardware_label(run), "model": run["model"]["name"],
            "backend": run["backend"], "threads": run.get("threads"), "tags": run["tags"],
            "tests": list(run["tests"])}


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
