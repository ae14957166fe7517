"""The Jinja environment of reports and sites.

Templates are looked up in order: the user's folder (``--templates`` or
``PDX_TEMPLATES``), folders that plugins return from ``pdx_report_templates``,
then pdx's own ``reports/templates``. A file of the same name earlier in that
order wins, so a team can restyle one partial and keep the rest. An override
can also extend the template it replaces: ``{% extends "default:run.html" %}``
names pdx's own, whatever else overrides it.
Autoescaping is on for every template; only rendered chart SVG is marked safe.
Filters format numbers; globals hand templates the views of a run.
"""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
from markupsafe import Markup

from pdx.domain import headline, placement
from pdx.domain.models.words import quant_label
from pdx.base import plugin_manager
from pdx.contract.errors import PdxError
from pdx.reports import labels, views
from pdx.reports.charts.specs import chart_text
from pdx.reports.hub import hubdata
from pdx.reports.site import leaderboard
from pdx.reports.urls import web_url
from pdx.base.units import fmt_si

TEMPLATES = Path(__file__).with_name("templates")
DEFAULT_PREFIX = "default"  # "default:NAME" is pdx's own template NAME, for an override that extends it


def template_dirs(user_dir: str | os.PathLike | None = None) -> list[Path]:
    dirs = []
    user = user_dir or os.environ.get("PDX_TEMPLATES")
    if user:
        path = Path(user).expanduser()
        if not path.is_dir():
            raise PdxError(f"template folder {path} does not exist", "give --templates an existing folder")
        dirs.append(path)
    # a plugin that raises is reported, not fatal
    for _, returned, _ in plugin_manager.call_each("pdx_report_templates"):
        dirs.extend(Path(d) for d in returned or [])
    dirs.append(TEMPLATES)
    return dirs


def _printable(value):
    """Text as a page may hold it: no control character a name brought in (NUL, ESC...)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        # Nearly every value is printable text: str.isprintable answers in C, the pattern only for the rest.
        return value if value.isprintable() else chart_text(value)
    return value


def environment(user_dir: str | os.PathLike | None = None) -> jinja2.Environment:
    own = jinja2.FileSystemLoader(str(TEMPLATES))
    loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(d)) for d in template_dirs(user_dir)]
                                 + [jinja2.PrefixLoader({DEFAULT_PREFIX: own}, delimiter=":")])
    # auto_reload off: templates do not change during a build, and checking costs a stat per include.
    env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, auto_reload=False, finalize=_printable)
    env.filters.update(
        rate=labels.fmt_rate,
        pct=labels.fmt_pct,
        bytes=labels.human_bytes,
        count=labels.human_count,
        quant=quant_label,
        si=fmt_si,
        when=labels.short_time,
        web_url=web_url,  # every link from stored data goes through it
    )
    env.globals.update(
        test_table=views.test_table,
        has_batches=views.has_batches,
        has_ceilings=views.has_ceilings,
        has_energy=views.has_energy,
        sample_lines=views.sample_lines,
        samples_summary=views.samples_summary,
        figures_of=views.figures_of,
        row_notes=views.row_notes,
        serving_cards=views.serving_cards,
        manifest=views.manifest,
        hardware_figures=views.hardware_figures,
        hardware_label=labels.hardware_label,
        backend_label=placement.backend_label,
        run_label=labels.run_label,
        system_label=labels.system_label,
        board_has_ceiling=leaderboard.board_has_ceiling,
        headline_rates=hubdata.headline_rates,
        left_out_rule=headline.RULE,
    )
    return env
