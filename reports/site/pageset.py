"""Pages a site builds, as plugins: page makers registered through ``pdx_register_pages``.

pdx's own pages beyond the lists (the hub's chip pages and "what to buy") register through the same
hook (:mod:`pdx.reports.site.builtin_pages`). A plugin's page is a :class:`SitePage`: a name, a title for
the site's navigation, and ``build(site)``, called once per build with a :class:`PluginSite`. It
writes ``NAME.html`` at the site's root (linked from every page's navigation) and any files under
``NAME/``, through templates of its ``pdx_report_templates`` folder that extend pdx's ``base.html``;
it cannot write over another page. A page maker that raises costs its pages, with a warning naming
the plugin; the site is built without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdx.contract.page import SitePage, check_page  # noqa: F401 (plugins import SitePage here)
from pdx.contract.errors import PdxError
from pdx.base.plugin_manager import PAGES, extensions
from pdx.reports.charts.chartset import warn_once

if TYPE_CHECKING:
    from pdx.reports.site.builder import SiteBuilder


class PluginSite:
    """What a page maker may read and write of the site being built.

    ``runs``: the runs the site keeps whole, as ``pdx show --json`` prints them (most samples left
    out); ``listed``: every run's listing (id, created_at, status, backend, model, hardware, tags,
    headline rates), newest first; ``page(path, template, title, data, **context)``: render a
    template (``site``, ``page`` and ``data`` are in its context, with ``context``) to ``path`` and
    write ``data`` beside it as JSON."""

    def __init__(self, builder: "SiteBuilder", name: str) -> None:
        self._builder, self.name = builder, name
        self.runs, self.listed = builder.runs, builder.listed

    def page(self, path: str, template: str, title: str, data: dict, **context) -> None:
        allowed = path == f"{self.name}.html" or (path.startswith(f"{self.name}/") and path.endswith(".html"))
        if not allowed or ".." in path.split("/") or "\\" in path:
            raise PdxError(f"page {self.name} may write {self.name}.html and {self.name}/*.html, not {path!r}")
        self._builder.page(path, template, title, data, runs=self.listed, **context)


# Names pdx's own pages and folders hold at a site's root: no plugin page takes one.
RESERVED = frozenset({"index", "runs", "hardware", "models", "compare", "chips", "buy", "assets", "data", "history"})


def page_makers() -> list[tuple[str, bool, SitePage]]:
    """(plugin, whether it is pdx's own, page) of every page maker, pdx's own first."""
    return [(record.name, record.distribution == "pdx", page)
            for record, page in extensions(PAGES)]


def navigation() -> list[tuple[str, str]]:
    """(title, file) of each plugin page, for every page's navigation, in load order."""
    seen: set[str] = set()
    out = []
    for _, own, page in page_makers():
        if not own and page.name not in RESERVED and page.name not in seen:
            seen.add(page.name)
            out.append((page.title, f"{page.name}.html"))
    return out


def build_pages(builder: "SiteBuilder") -> None:
    """Every registered page of ``builder``'s site: pdx's own given the builder itself, a plugin's a
    :class:`PluginSite`; a plugin's failure is a warning and costs only its pages."""
    built: set[str] = set()
    for plugin, own, page in page_makers():
        if own:
            page.build(builder)
            continue
        if page.name in RESERVED or page.name in built:
            warn_once(f"pdx: warning: plugin {plugin}: a page named {page.name} is already on the site; "
                      "this one is left out")
            continue
        built.add(page.name)
        try:
            page.build(PluginSite(builder, page.name))
        except Exception as exc:  # one plugin's broken page costs its pages, never the site
            warn_once(f"pdx: warning: plugin {plugin}: page {page.name} failed ({type(exc).__name__}: {exc}); "
                      "the site is built without it")
