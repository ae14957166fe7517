"""What a plugin's chart maker returns (``pdx_register_charts``); the view a maker is given is
:class:`pdx.reports.charts.chartset.ChartView`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from pdx.contract.errors import PdxError

# A chart's or page's name: its files' and anchors' names.
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


@dataclass(frozen=True)
class ChartSpec:
    """A chart a maker asks for: ``name`` a slug unique on the page, ``vega_lite`` the spec (data, not
    code), rendered to inline SVG at build time."""

    name: str
    title: str
    note: str
    vega_lite: dict


# Given a pdx.reports.charts.chartset.ChartView (the page's runs, namer, headline tests).
ChartMaker = Callable[..., "ChartSpec | None"]


def check_maker(make: object) -> ChartMaker:
    if not callable(make):
        raise PdxError(f"it registered {make!r} as a chart maker, which is not callable")
    return make
