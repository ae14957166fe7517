"""Where the plugin guide of pdx 0.1 told plugins to import the page types from, kept so that a plugin
written to it still loads: :class:`SitePage` is :mod:`pdx.contract.page`'s (import it from there),
:class:`PluginSite` :mod:`pdx.reports.site.pageset`'s."""

from pdx.contract.page import SitePage  # noqa: F401
from pdx.reports.site.pageset import PluginSite  # noqa: F401
