"""The pages every site has, as page makers (:mod:`pdx.reports.site.builtin_pages` registers them):
the machine and model pages and the leaderboard (``index.html``), each with charts; every run's own
page and the list of runs; a comparison per configuration with two comparable runs. Each is given the
:class:`pdx.reports.site.builder.SiteBuilder` building the site."""

from __future__ import annotations

from typing import Callable

from pdx.reports import comparison, groups, labels
from pdx.reports.charts.chartset import charts_for
from pdx.reports.hub import hubdata
from pdx.reports.site.builder import SCHEMA, SiteBuilder, json_text
from pdx.reports.site.leaderboard import leaderboard_chart, public
from pdx.reports.site.pages import RUNS_SHOWN

RECENT_RUNS = 25  # the newest runs a group page, the index and a comparison list
SEARCH_COLUMNS = ["id", "created_at", "status", "hardware", "model", "backend", "threads", "tests", "tags",
                  "prefill", "decode"]


def hardware_pages(builder: SiteBuilder) -> None:
    """``hardware/<slug>.html``: one machine's runs across models and backends."""
    for group in builder.by_hardware.values():
        if not groups.hardware_recorded(group.latest):
            continue  # runs that name no machine are no machine's: no page, counted on the index
        _group_page(builder, "hardware", groups.hardware_slug(group.latest), labels.hardware_label(group.latest),
                    group, lambda r: f"{r['model']['name']} · {r['backend']}", {"hardware": group.latest["hardware"]})


def model_pages(builder: SiteBuilder) -> None:
    """``models/<slug>.html``: one model's runs across machines and backends."""
    for group in builder.by_model.values():
        _group_page(builder, "models", groups.model_slug(group.latest), group.latest["model"]["name"], group,
                    labels.system_threads_label, {"model": group.latest["model"]})


def _group_page(builder: SiteBuilder, folder: str, slug: str, title: str, group: groups.Group,
                namer: Callable[[dict], str], about: dict) -> None:
    board, note = builder.board(group.runs, "../")
    charts = charts_for(group.runs, builder.renderer, namer, builder.headline, per_test=False)
    data = {**about, "leaderboard": public(board), "left_out": note, "runs": [r["id"] for r in group.every],
            "charts": [c.to_dict() for c in charts]}
    builder.later(f"{folder}/{slug}.html", "group.html", title, data, kind=folder, about=about, board=board,
                  board_note=note, charts=charts, runs=group.every, recent=group.every[:RECENT_RUNS])


def index_page(builder: SiteBuilder) -> None:
    """``index.html``: the leaderboard of every configuration, the machines, models and comparisons."""
    board, note = builder.board(builder.runs, "")
    chart = leaderboard_chart(board, builder.renderer)
    hardware = [_entry(g, groups.hardware_slug, labels.hardware_label, "hardware")
                for g in builder.by_hardware.values() if groups.hardware_recorded(g.latest)]
    unrecorded = sum(len(g.every) for g in builder.by_hardware.values() if not groups.hardware_recorded(g.latest))
    models = [_entry(g, groups.model_slug, lambda r: r["model"]["name"], "models") for g in builder.by_model.values()]
    compared = [{"title": labels.system_label(g.latest, with_model=True),
                 "page": f"compare/{groups.config_slug(g.latest)}.html", "runs": len(g.every),
                 "latest": g.latest["created_at"]}
                for k, g in builder.configs.items() if k in builder.compared]
    data = {"title": builder.title, "pdx_version": builder.info["version"], "data_time": builder.info["data_time"],
            "headline_tests": builder.headline, "leaderboard": public(board), "left_out": note, "hardware": hardware,
            "runs_without_hardware": unrecorded, "models": models, "comparisons": compared,
            "charts": [chart.to_dict()] if chart else []}
    builder.later("index.html", "index.html", builder.title, data, board=board, board_note=note, board_chart=chart,
                  hardware=hardware, unrecorded=unrecorded, models=models, comparisons=compared,
                  recent=builder.listed[:RECENT_RUNS], runs=builder.listed)


def _entry(group: groups.Group, slugger: Callable[[dict], str], namer: Callable[[dict], str], folder: str) -> dict:
    run = group.latest
    return {"name": namer(run), "page": f"{folder}/{slugger(run)}.html", "runs": len(group.every),
            "models": len({groups.model_key(r) for r in group.every}),
            "hardware": len({groups.hardware_key(r) for r in group.every}),
            "backends": sorted({r["backend"] for r in group.every}), "latest": run["created_at"]}


def run_pages(builder: SiteBuilder) -> None:
    """``runs/<id>.html`` for each run (:meth:`SiteBuilder.write_run_pages`), then ``runs/index.html``: its
    newest :data:`RUNS_SHOWN` in the page, all of them in ``runs/search.js`` for the page's filter and
    sort, and in ``runs/ids/<xx>.json`` by the first two digits of their ids (a new run changes one of
    those files, whatever its date)."""
    builder.write_run_pages()
    buckets: dict[str, list[dict]] = {}
    for listed in builder.listed:
        buckets.setdefault(listed["id"][:2], []).append(listed)
    for prefix, in_bucket in sorted(buckets.items()):  # a bucket's summaries at a time: a site's are many
        builder.writer.write(f"runs/ids/{prefix}.json",
                             json_text({"prefix": prefix, "runs": [run_summary(r) for r in in_bucket]}))
    builder.writer.write("runs/search.js", search_script(builder.listed))
    pages_ = [{"prefix": p, "path": f"runs/ids/{p}.json", "runs": len(v)} for p, v in sorted(buckets.items())]
    data = {"total": len(builder.listed), "runs": [run_summary(r) for r in builder.listed[:RUNS_SHOWN]],
            "pages": pages_}
    builder.page("runs/index.html", "runs.html", "All runs", data, runs=builder.listed,
                 newest=builder.listed[:RUNS_SHOWN])


def compare_pages(builder: SiteBuilder) -> None:
    """``compare/<slug>.html`` per configuration with a comparable pair (:func:`comparison.comparable_pair`):
    the newest run that shares a test with an earlier one against the newest such earlier run (the
    newest two, unless one of them measured nothing the other did); no rendered charts (a site has one
    such page per configuration of two runs or more), the change drawn in the table instead."""
    for key in builder.compared:
        config = builder.configs[key]
        paired = builder.pairs[config.key]
        ids = [r["id"] for r in config.every]  # newest first, as the pair was sought
        passed = [r for r in config.every[:ids.index(paired[1]["id"])] if r["id"] != paired[0]["id"]]
        new, base = builder.full(paired[0]), builder.full(paired[1])
        lines = comparison.compare(base, new)
        differences = comparison.differences(base, new)
        data = {"baseline": base["id"], "new": new["id"], "tests": [line.to_dict() for line in lines],
                "differences": differences, "runs": [run_summary(r) for r in config.every]}
        title = labels.system_label(new, with_model=True)
        data["passed_over"] = [r["id"] for r in passed]
        builder.page(f"compare/{groups.config_slug(new)}.html", "compare.html", title, data, base=base, new=new,
                     lines=lines, differences=differences, runs=config.every, charts=[], listed=RECENT_RUNS,
                     passed_over=passed)


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
    return "window.PDX_RUNS = " + json_text(data).rstrip("\n") + ";\n"


def run_summary(run: dict) -> dict:
    return {"id": run["id"], "page": f"runs/{run['id']}.html", "created_at": run["created_at"],
            "status": run["status"], "hardware": labels.hardware_label(run), "model": run["model"]["name"],
            "backend": run["backend"], "threads": run.get("threads"), "tags": run["tags"],
            "tests": list(run["tests"])}
