"""What every page shares: links between pages, and the facts in its footer.

A single-file report links runs by anchor and has no other pages; a site
links every run, model, hardware and configuration page by relative path,
so it opens from ``file://`` and from any folder of a web server.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

import pdx
from pdx.reports import groups, labels
from pdx.reports.site.pageset import navigation

# Rows a page lists in its HTML where a list grows with the site (all runs, a chip's runs); the
# runs page's filter reaches every run.
RUNS_SHOWN = 200


class ReportLinks:
    """Links inside one file: runs by anchor, no other pages."""

    def run(self, run: dict) -> str:
        return f"#run-{run['id']}"

    def model(self, run: dict) -> None:
        return None

    def hardware(self, run: dict) -> None:
        return None

    def config(self, run: dict) -> None:
        return None

    def config_runs(self, run: dict) -> None:
        return None


@dataclass
class SiteLinks:
    """Links from a page ``root`` levels below the site's top ("" or "../")."""

    root: str = ""
    configs_with_pages: frozenset = frozenset()

    def run(self, run: dict) -> str:
        return f"{self.root}runs/{run['id']}.html"

    def model(self, run: dict) -> str:
        return f"{self.root}models/{groups.model_slug(run)}.html"

    def hardware(self, run: dict) -> str | None:
        """Its machine's page; None for a run that names no machine (it has none)."""
        if not groups.hardware_recorded(run):
            return None
        return f"{self.root}hardware/{groups.hardware_slug(run)}.html"

    def runs_list(self, **exact: str) -> str:
        """The runs page filtered to the runs whose ``hardware``, ``model`` or ``backend`` name is
        exactly the one given (runs.js reads the address), a link that survives rebuilds."""
        return f"{self.root}runs/index.html#" + urlencode(exact, quote_via=quote)

    def config(self, run: dict) -> str | None:
        """The comparison page of the run's configuration, where it has one (two runs or more)."""
        if groups.config_key(run) not in self.configs_with_pages:
            return None
        return f"{self.root}compare/{groups.config_slug(run)}.html"

    def config_runs(self, run: dict) -> str:
        """Every run of the run's configuration: the runs list filtered to it, a link a run's own page
        can hold without knowing the rest of the site."""
        return self.runs_list(hardware=labels.hardware_label(run), model=run["model"]["name"], backend=run["backend"])


def data_time(runs: list[dict]) -> str | None:
    """When the newest data was taken: pages change only when their data does."""
    times = [r.get("finished_at") or r.get("created_at") for r in runs]
    newest = max((t for t in times if t), default=None)
    return labels.short_time(newest) if newest else None


def site_info(title: str, runs: list[dict], inline: bool) -> dict:
    """What every page of a site (or a report: ``inline``) shows of it; ``nav``: plugins' pages."""
    return {"title": title, "version": pdx.__version__, "data_time": data_time(runs), "n_runs": len(runs),
            "inline": inline, "nav": [] if inline else navigation()}
