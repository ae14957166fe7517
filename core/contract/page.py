"""What a plugin registers to add a page to a site (``pdx_register_pages``), and what its ``build`` is
given (:class:`PageSite`; a plugin's is :class:`pdx.reports.site.pageset.PluginSite`). pdx's own pages
register through the same hook (:mod:`pdx.reports.site.builtin_pages`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from pdx.contract.chart import SLUG
from pdx.contract.errors import PdxError

# When a page maker runs in a build, in this order (pdx's own makers first within each, in the order they
# register): "charts", pages whose charts render in worker processes while the rest are written (they hold
# their pages back until the charts are done); "pages", every other.
STAGES = ("charts", "pages")


class PageSite(Protocol):
    """What a page maker writes a site through: the runs it keeps whole (``pdx show --json``'s form, most
    samples left out), every run's listing newest first, and ``page``, which renders ``template`` to
    ``path`` with ``data`` written beside it as JSON."""

    @property
    def runs(self) -> list[dict[str, Any]]: ...

    @property
    def listed(self) -> list[dict[str, Any]]: ...

    def page(self, path: str, template: str, title: str, data: dict[str, Any], **context: Any) -> None: ...


@dataclass(frozen=True)
class SitePage:
    """What a plugin registers: ``name`` (a slug: its files are ``NAME.html`` and ``NAME/...``),
    ``title`` (the navigation link's text), ``build(site)`` (given a :class:`PageSite`) and ``stage``
    (one of :data:`STAGES`; a plugin's page is a "pages" one)."""

    name: str
    title: str
    build: Callable[..., None]  # given a PageSite: a plugin's a pdx.reports.site.pageset.PluginSite
    stage: str = "pages"


def check_page(page: object) -> SitePage:
    if not isinstance(page, SitePage):
        raise PdxError(f"it registered {page!r}, which is not a pdx.reports.site.pageset.SitePage")
    if not isinstance(page.name, str) or not SLUG.fullmatch(page.name):
        raise PdxError(f"its page name {page.name!r} is not a slug (letters, digits, -)")
    if not isinstance(page.title, str) or not page.title.strip() or not callable(page.build):
        raise PdxError(f"its page {page.name} needs a title (text) and a build function")
    if page.stage not in STAGES:
        raise PdxError(f"its page {page.name} has stage {page.stage!r}; give one of {', '.join(STAGES)}")
    return page
