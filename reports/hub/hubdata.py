"""What the hub pages show, derived from runs with stats: decode against its ceiling by
chip, each machine's figures for the "what to buy" estimate, and decode depth curves.

Depth curve: decode time per token against context, fitted over every sample of a run's
batch-1 decode tests (``x`` = the test's depth plus half its generated tokens, the mean
context a step sees; ``y`` = the sample's time per token): the intercept is the time per
token of an empty cache, the slope the KV cache's cost per token of context.
"""

from __future__ import annotations

from pdx.domain import headline
from pdx.domain.headline import CLASSIC_DECODE
from pdx.reports import groups, labels
from pdx.domain.stats import linear_fit


def depth_fit(run: dict) -> dict | None:
    xs, ys = [], []
    for test in headline.measured(run, "tg", batch=1):
        for sample in test.get("samples") or []:
            xs.append(test["depth"] + test["n_gen"] / 2)
            ys.append(sample["ns"] / 1e9 / test["n_gen"])
    return linear_fit(xs, ys)


def _energy(test: dict) -> dict:
    """A headline test's joules per token and the price its run was costed at, where a meter read it."""
    energy = (test.get("stats") or {}).get("energy")
    if not energy or energy.get("j_per_token") is None:
        return {}
    return {"j_per_token": energy["j_per_token"], "price_kwh": energy["price_kwh"], "currency": energy["currency"]}


def _decode(run: dict) -> dict | None:
    test = headline.headline_test(run, "tg")
    if test is None:
        return None
    samples = test.get("samples") or []
    rate = headline.rate(test)
    per_token = (sum(s["ns"] for s in samples) / len(samples) / 1e9 / test["n_gen"]) if samples else (
        1 / rate if rate else None)
    return {"test": test["name"], "n_gen": test["n_gen"], "rate": rate, "per_token_s": per_token} | _energy(test)


def _prefill(run: dict) -> dict | None:
    test = headline.headline_test(run, "pp")
    if test is None:
        return None
    return {"test": test["name"], "n_prompt": test["n_prompt"], "rate": headline.rate(test)} | _energy(test)


def headline_figures(run: dict) -> tuple[dict | None, dict | None]:
    """A run's headline prefill and decode figures (the tests the hub pages show), each with the
    fraction of its ceiling; a run's listing (:mod:`pdx.reports.site.runs`) carries them made."""
    if "headline_figures" in run:
        return run["headline_figures"]
    found = _prefill(run), _decode(run)
    for figures in found:
        if figures:
            test = next(t for t in run["tests"] if t["name"] == figures["test"])
            figures["fraction"] = (test.get("ceilings") or {}).get("fraction")
    return found


def headline_rates(run: dict) -> tuple[float | None, float | None]:
    """A run's headline prefill and decode rates, to 0.01 t/s."""
    prefill, decode = headline_figures(run)
    return (round(prefill["rate"], 2) if prefill else None, round(decode["rate"], 2) if decode else None)


def estimable(run: dict) -> bool:
    """Whether the run has what "what to buy" estimates from (:func:`machine`)."""
    return bool(_prefill(run) and _decode(run))


def classic_test(run: dict) -> dict | None:
    """The run's test of the classic table (tg128 at depth 0, batch 1), measured."""
    return next((t for t in headline.measured(run, "tg", batch=1, depth=0) if t["name"] == CLASSIC_DECODE), None)


def _batches(run: dict, decode: dict) -> list[dict]:
    """Per-sequence decode rate by batch: batch 1 and every batched test of the same length."""
    found = {1: decode["rate"]}
    for test in headline.measured(run, "tg", depth=0):
        if test["batch"] > 1 and test["n_gen"] == decode["n_gen"]:
            found[test["batch"]] = test["stats"]["per_sequence_rate"]
    return [{"batch": b, "per_sequence_rate": r} for b, r in sorted(found.items())]


def machine(run: dict, links) -> dict | None:
    """One run's figures for the estimate; None without both a prefill and a decode rate."""
    if not estimable(run):
        return None
    prefill, decode = _prefill(run), _decode(run)
    if decode is None:  # estimable() found a decode test
        return None
    return {"hardware": labels.hardware_label(run), "hardware_page": links.hardware(run), "backend": run["backend"],
            "run": run["id"], "run_page": links.run(run), "prefill": prefill,
            "decode": decode, "depth_fit": depth_fit(run), "batches": _batches(run, decode)}


def estimate_rate(run: dict) -> float | None:
    """The decode rate "what to buy" ranks a configuration's runs by (its :func:`machine` figures'),
    None for a run it cannot estimate from."""
    decode = _decode(run) if _prefill(run) else None
    return decode["rate"] if decode else None


# What the page says of the run it estimates from (hub_buy.html shows it).
BUY_CHOICE = "best"


def buy_data(runs: list[dict], links, listed: list[dict] | None = None) -> list[dict]:
    """Per model: every (machine, backend) with data for it, from its *best* valid run that has pp and
    tg: the highest decode rate (ties: the newest), so one run slowed by other work on the machine does
    not move it, and a run above its ceiling, unable to fit, noisy or overloaded (:func:`pdx.domain.headline.left_out`)
    never gives the estimate. ``listed``: every run's listing where ``runs`` are a site's kept runs
    (the count of runs each estimate was chosen from); by default ``runs`` themselves."""
    counts: dict = {}
    for run in runs if listed is None else listed:
        prefill, decode = headline_figures(run)
        if prefill and decode and not headline.left_out(run):
            key = (groups.model_key(run), groups.hardware_key(run), run["backend"])
            counts[key] = counts.get(key, 0) + 1
    models = []
    for group in groups.group_by(runs, groups.model_key).values():
        machines: dict[tuple[str, str], dict] = {}
        for run in group.runs:  # newest first: a tie goes to the newest
            slot = (groups.hardware_key(run), run["backend"])
            rate = None if headline.left_out(run) else estimate_rate(run)
            if rate is not None and (slot not in machines or rate > machines[slot]["decode"]["rate"]):
                found = machine(run, links)
                if found is not None:  # a rate to estimate from is a run machine() takes
                    machines[slot] = found
        for (hardware, backend), entry in machines.items():
            entry["chosen"] = {"by": BUY_CHOICE, "of": counts.get((group.key, hardware, backend), 1)}
        if machines:
            model = group.latest["model"]
            models.append({"sha256": model["sha256"], "name": model["name"], "page": links.model(group.latest),
                           "machines": sorted(machines.values(), key=lambda m: (m["hardware"], m["backend"]))})
    return sorted(models, key=lambda m: (-len(m["machines"]), m["name"]))


def buy_left_out(listed: list[dict]) -> str | None:
    """How many runs with a prefill and a decode figure "what to buy" left out, and why."""
    return headline.left_out_note([headline.left_out(run) for run in listed if all(headline_figures(run))])


def chip_page(run: dict, root: str) -> str | None:
    """The chip page of the run's machine; None for a run that names none (it has no page)."""
    if not groups.hardware_recorded(run):
        return None
    return f"{root}chips/{groups.hardware_slug(run)}.html"


def chip_name(run: dict) -> str:
    basis = run.get("ceiling_basis") or {}
    return (basis.get("chip") or {}).get("name") or basis.get("label") or labels.hardware_label(run)


def decode_vs_ceiling(runs: list[dict], links) -> list[dict]:
    """The classic table: per chip, model and backend, the newest valid run's tg128 against its ceiling
    (:func:`pdx.domain.headline.left_out`: a run above its ceiling is no chip's figure)."""
    rows = {}
    for run in runs:  # newest first
        key = groups.config_key(run)
        test = classic_test(run)
        if key in rows or test is None or headline.left_out(run):
            continue
        ceilings = test.get("ceilings") or {}
        ceiling = ceilings.get("ceiling")
        measured = headline.rate(test)
        rows[key] = {"chip": chip_name(run), "chip_page": chip_page(run, links.root), "model": run["model"]["name"],
                     "model_page": links.model(run), "backend": run["backend"],
                     "bandwidth": (run.get("ceiling_basis") or {}).get("bandwidth"), "ceiling": ceiling,
                     "bound": ceilings.get("bound"), "measured": measured,
                     "fraction": measured / ceiling if ceiling else None,
                     "run": run["id"], "run_page": links.run(run)}
    return sorted(rows.values(), key=lambda r: (r["model"], -(r["bandwidth"] or 0), r["chip"]))


def chip_runs(runs: list[dict], links) -> list[dict]:
    """Runs of one machine (or their listings), newest first, with their headline pp and tg and
    their fractions."""
    shown = []
    for run in runs:
        prefill, decode = headline_figures(run)
        shown.append({"id": run["id"], "page": links.run(run), "created_at": run["created_at"],
                      "model": run["model"]["name"], "model_page": links.model(run), "backend": run["backend"],
                      "engine": " ".join(filter(None, [run["engine"]["name"], run["engine"].get("version")])),
                      "prefill": prefill, "decode": decode})
    return shown
