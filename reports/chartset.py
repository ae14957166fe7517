"""Where the plugin guide of pdx 0.1 told plugins to import the chart types from, kept so that a plugin
written to it still loads: :class:`ChartSpec` and :data:`ChartMaker` are :mod:`pdx.contract.chart`'s
(import them from there), :class:`ChartView` :mod:`pdx.reports.charts.chartset`'s."""

from pdx.contract.chart import ChartMaker, ChartSpec  # noqa: F401
from pdx.reports.charts.chartset import ChartView  # noqa: F401
