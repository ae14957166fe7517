"""What a plugin registers to add a page to a site (``pdx_register_pages``); the site view a page's
``build`` is given is :class:`pdx.reports.site.pageset.PluginSite`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pdx.contract.chart import SLUG
from pdx.contract.errors import PdxError


@dataclass(frozen=True)
class SitePage:
    """What a plugin registers: ``name`` (a slug: its files are ``NAME.html`` and ``NAME/...``),
    ``title`` (the navigation link's text) and ``build(site)`` (given a :class:`pdx.reports.site.pageset.PluginSite`)."""

    name: str
    title: str
    build: Callable[..., None]  # given a pdx.reports.site.pageset.PluginSite


def check_page(page: object) -> SitePage:
    if not isinstance(page, SitePage):
        raise PdxError(f"it registered {page!r}, which is not a pdx.reports.site.pageset.SitePage")
    if not isinstance(page.name, str) or not SLUG.fullmatch(page.name):
        raise PdxError(f"its page name {page.name!r} is not a slug (letters, digits, -)")
    if not isinstance(page.title, str) or not page.title.strip() or not callable(page.build):
        raise PdxError(f"its page {page.name} needs a title (text) and a build function")
    return page
