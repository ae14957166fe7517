"""pdx's own pages beyond the lists, registered through the hook a plugin uses (entry point ``pages``).

Imported by every ``pdx`` command, so it imports the page code only when the hook is called.
"""

from pdx import hookimpl


@hookimpl
def pdx_register_pages(register):
    from pdx.reports.hub import hubpages
    from pdx.reports.site import history_pages, sweep_pages
    from pdx.reports.site.pageset import SitePage

    register(SitePage("hub", "chips and what to buy", hubpages.build))
    register(SitePage("history", "an engine's history over versions", history_pages.build))
    register(SitePage("sweeps", "server-configuration sweeps and their Pareto fronts", sweep_pages.build))
