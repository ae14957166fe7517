"""The leaderboard: one row per hardware x model x backend, pp and tg side by side.

Each cell is the best mean rate any valid run of that configuration reached on
the selection's headline test (:func:`pdx.domain.headline.left_out`: none above its
ceiling, unable to fit, noisy or overloaded), linked to that run, with its fraction of ceiling
where the run stores one. A configuration without such a figure has no row; the
note under the board says how many runs and configurations it left out, and why.
"""

from __future__ import annotations

from typing import Iterable

from pdx.domain import headline as validity
from pdx.reports import groups, labels
from pdx.reports.charts import specs as charts
from pdx.reports.charts.chartset import Chart, make_chart
from pdx.reports.charts.figures import bar_record
from pdx.reports.charts.render import ChartRenderer
from pdx.reports.rows import Row

# A chart of every configuration stops being readable past this many rows.
CHART_LIMIT = 20


def _cell(found: tuple[dict, Row] | None, links) -> dict | None:
    if found is None:
        return None
    run, row = found
    ceiling = row.ceiling
    return {"test": row.test, "rate": row.rate, "ci95": row.ci95, "n": row.n, "reported": row.reported,
            "run": run["id"], "run_page": links.run(run), "ceiling": ceiling.rate if ceiling else None,
            "bound": ceiling.bound if ceiling else None, "fraction": ceiling.fraction if ceiling else None,
            "row": row}


def leaderboard(configs: Iterable[groups.Group], headline: dict[str, str], links) -> list[dict]:
    board = []
    for group in configs:
        run = group.latest
        best = group.headline(headline)
        if not any(best.values()):
            continue  # no valid run with a headline figure: a row of dashes says nothing
        board.append({
            "hardware": {"id": groups.hardware_key(run), "name": labels.hardware_label(run),
                         "page": links.hardware(run)},
            "model": {"sha256": groups.model_key(run), "name": run["model"]["name"], "page": links.model(run)},
            "backend": run["backend"],
            "runs": len(group.every),
            "latest": run["created_at"],
            "comparison": links.config(run),
            **{phase: _cell(best.get(phase), links) for phase in headline},
        })
    # Fastest decode first: the figure a reader of a leaderboard looks for.
    return sorted(board, key=lambda b: -((b.get("decode") or {}).get("rate") or 0))


def board_note(configs: list[groups.Group], board: list[dict]) -> str | None:
    """What the board of ``configs`` left out: runs that give no headline, and why
    (:func:`pdx.reports.groups.left_out_note`), and configurations without a headline figure."""
    notes = [groups.left_out_note(configs)]
    listed = {(entry["hardware"]["id"], entry["model"]["sha256"], entry["backend"]) for entry in board}
    # A configuration whose runs were left out is counted among them; the others measured no headline test.
    unlisted = sum(1 for group in configs if group.key not in listed
                   and not any(validity.left_out(run) for run in group.every))
    if unlisted:
        notes.append(f"{unlisted} configuration{'s' if unlisted != 1 else ''} without a pp or tg test at depth 0, "
                     "batch 1 not listed")
    return "; ".join(note for note in notes if note) or None


def board_has_ceiling(board: list[dict]) -> bool:
    return any((entry.get(phase) or {}).get("fraction") is not None
               for entry in board for phase in ("prefill", "decode"))


def leaderboard_chart(board: list[dict], renderer: ChartRenderer) -> Chart | None:
    data = [bar_record(f"{b['hardware']['name']} · {b['model']['name']} · {b['backend']}", b[phase]["row"])
            for b in board[:CHART_LIMIT] for phase in ("prefill", "decode") if b.get(phase)]
    if not data:
        return None
    shown = "" if len(board) <= CHART_LIMIT else f"; the {CHART_LIMIT} fastest decoders of {len(board)}"
    return make_chart(renderer, "leaderboard", "Best prefill and decode per configuration",
                      f"the headline tests' best mean tokens/s; grey dashed: the ceiling, where stored{shown}",
                      charts.phase_bars(data, "configuration"))


def public(board: list[dict]) -> list[dict]:
    """The leaderboard as its JSON file holds it (no internal row objects)."""
    return [{k: ({ck: cv for ck, cv in v.items() if ck != "row"} if isinstance(v, dict) and "row" in v else v)
             for k, v in entry.items()} for entry in board]
