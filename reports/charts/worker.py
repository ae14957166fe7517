"""A chart-rendering worker: a JSON list of Vega-Lite specs on stdin, their SVGs as a JSON list on stdout.

Started by :class:`pdx.reports.charts.render.ChartRenderer` as ``python -m
pdx.reports.charts.worker``: a fresh interpreter, so it works whatever the
calling program's main module does (multiprocessing's spawn would re-run it).
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    import vl_convert

    specs = json.load(sys.stdin)
    json.dump([vl_convert.vegalite_to_svg(spec) for spec in specs], sys.stdout)


if __name__ == "__main__":
    main()
