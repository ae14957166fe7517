"""Charts: Vega-Lite specs, the chart data read from runs, the makers registered through hooks, and
their rendering to SVG."""
