"""The hub's pages of a site: decode against its ceiling by chip (``chips.html``), one page
per chip with its ceilings and every run on it (``chips/<slug>.html``), and "what to buy"
(``buy.html``, computed in the page by ``assets/buy.js``). Figures come from
:mod:`pdx.reports.hub.hubdata`; each page's JSON lies beside it as every page's does.
"""

from __future__ import annotations

import json

from pdx.domain import headline
from pdx.reports import groups, labels
from pdx.reports.hub import hubdata
from pdx.reports.site.pages import RUNS_SHOWN


def _script_json(data: dict) -> str:
    # Inside <script>: no "</script>" or "<!--" may appear, whatever a model or machine is named.
    return json.dumps(data, separators=(",", ":"), default=str).replace("<", "\\u003c").replace(
        "\u2028", "\\u2028").replace("\u2029", "\\u2029")


def build(builder) -> None:
    """Write the hub pages through ``builder`` (a :class:`pdx.reports.site.builder.SiteBuilder`)."""
    top = builder.links("")
    rows = hubdata.decode_vs_ceiling(builder.runs, top)
    left_out = headline.left_out_note([headline.left_out(run) for run in builder.listed if run["headline_figures"][1]])
    builder.page("chips.html", "hub_chips.html", "Decode vs ceiling by chip", {"rows": rows, "left_out": left_out},
                 rows=rows, left_out=left_out,
                 classic=hubdata.CLASSIC_DECODE, runs=builder.listed)
    below = builder.links("../")
    for group in builder.by_hardware.values():
        run = group.latest
        if not groups.hardware_recorded(run):
            continue  # no machine named: no chip page
        basis = next((r["ceiling_basis"] for r in group.runs if r.get("ceiling_basis")), None)
        # The newest runs in the page; every one through the runs page's filter, linked.
        shown = hubdata.chip_runs(group.every[:RUNS_SHOWN], below)
        everything = below.runs_list(hardware=labels.hardware_label(run))
        builder.page(hubdata.chip_page(run, ""), "hub_chip.html", labels.hardware_label(run),
                     {"hardware": run["hardware"], "ceiling_basis": basis, "total_runs": len(group.every),
                      "runs": shown}, rows=shown, basis=basis, hardware_page=below.hardware(run), runs=group.every,
                     all_runs=everything)
    models = hubdata.buy_data(builder.runs, top, builder.listed)
    left_out = hubdata.buy_left_out(builder.listed)
    data = {"models": models, "left_out": left_out}
    builder.page("buy.html", "hub_buy.html", "What to buy", data, models=models, data_json=_script_json(data),
                 runs=builder.listed, left_out=left_out)
    builder.writer.write("assets/buy.js", builder.env.get_template("buy.js").render())
