"""HTML comparison reports and static sites rendered from the registry.

- :mod:`pdx.reports.charts`: chart specs, the chart data read from runs, the chart makers plugins
  register, and their rendering to SVG.
- :mod:`pdx.reports.report`: ``pdx report``, one self-contained HTML file.
- :mod:`pdx.reports.site`: ``pdx publish``, a static site, and the pages plugins register.
- :mod:`pdx.reports.hub`: a site built straight from a results folder, and the hub's pages.

What more than one of them reads stays here: a run's rows and page views, labels, comparisons,
groups, the page links and footer, the Jinja environment, the link allow-list, the writer, which
runs are selected, and ``pdx check``'s gate.
"""
