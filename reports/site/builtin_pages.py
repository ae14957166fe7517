"""pdx's own pages, registered through the hook a plugin uses (entry point ``pages``), in the order a
build makes them within each stage (:data:`pdx.contract.page.STAGES`): the machine and model pages and
the leaderboard, whose charts render while the rest are written (the leaderboard last, written once
every chart is done); then every run's page and the runs list, the comparisons, the hub's chip and
"what to buy" pages and the engines' history. Any plugin's pages follow pdx's in each stage.

Imported by every ``pdx`` command, so it imports the page code only when the hook is called.
"""

from pdx import hookimpl


@hookimpl
def pdx_register_pages(register):
    from pdx.reports.hub import hubpages
    from pdx.reports.site import core_pages, history_pages, sweep_pages
    from pdx.reports.site.pageset import SitePage

    register(SitePage("hardware", "machines", core_pages.hardware_pages, stage="charts"))
    register(SitePage("models", "models", core_pages.model_pages, stage="charts"))
    register(SitePage("index", "the leaderboard", core_pages.index_page, stage="charts"))
    register(SitePage("runs", "every run", core_pages.run_pages))
    register(SitePage("compare", "each configuration's newest runs compared", core_pages.compare_pages))
    register(SitePage("hub", "chips and what to buy", hubpages.build))
    register(SitePage("history", "an engine's history over versions", history_pages.build))
    register(SitePage("sweeps", "server-configuration sweeps and their Pareto fronts", sweep_pages.build))
