"""The third bound of decode: a fixed cost per token, read from a run's own depth sweep.

Memory and compute bound a decode step by what it must read and multiply. A small model on a
big GPU reaches neither: each step also pays kernel launches and synchronisation, a time that
does not grow with the bytes read. pdx estimates it from the run's own tg tests at several
depths (same generated length and batch), with no engine-specific knowledge:

- for each depth, the residual r(d) = measured time per step - the step time at the test's
  ceiling (its bytes at the ceiling's bandwidth, or its FLOPs at the compute figure where that
  binds): what the stored ceiling does not explain;
- a least-squares line through r against the tests' mean context, read at context 0, is the
  fixed cost per step: the time a step takes beyond its reads at the ceiling, with no KV cache
  to read. Reading the residual at zero context keeps out attention's own inefficiency at depth
  (its KV reads run slower than the weights'), which grows with depth; the line's slope holds it.

The intercept is derived from stored figures at read time and never stored (a statistic of the
run, like its fit). It is left out where it cannot be estimated: fewer than two depths, no tg
test with a ceiling, a speculating test, or an intercept that is not above zero.

With it each tg test has a third bound, ``batch / (fixed + step time at the ceiling)``: the rate
the test could reach if its reads ran at the ceiling and it still paid the fixed cost. The test
is "overhead-bound" where the fixed cost is longer than the step time at the ceiling.
"""

from __future__ import annotations

from pdx.domain.ceilings.roofline import mean_context
from pdx.domain.stats import linear_fit
from pdx.base.units import fmt_si

OVERHEAD = "overhead"


def _point(test: dict) -> tuple[tuple[int, int], float, float, float] | None:
    """(group, mean context, measured seconds per step, ceiling seconds per step) of a tg test that can
    take part in the fit; None for any other."""
    if test.get("kind") != "tg" or test.get("status") != "ok" or test.get("n_prompt"):
        return None
    record = test.get("ceilings") or {}
    decode = (record.get("phases") or {}).get("decode") or {}
    rate = record.get("measured")  # the mean rate the ceiling judged
    if not (rate and decode.get("ceiling")) or decode.get("speculative") or record.get("speculative"):
        return None
    batch = int(test.get("batch") or 1)
    # Phases stored before the mean context was kept lack it: it is the same function of depth and length.
    context = decode.get("context", mean_context(int(test.get("depth") or 0), int(test["n_gen"])))
    return (int(test["n_gen"]), batch), float(context), batch / rate, batch / decode["ceiling"]


def fixed_cost(run: dict) -> list[dict]:
    """One estimate per group of tg tests (generated length, batch) swept over two or more depths;
    none where no group has them."""
    groups: dict[tuple[int, int], list[tuple[dict, float, float, float]]] = {}
    for test in run.get("tests") or ():
        point = _point(test)
        if point:
            groups.setdefault(point[0], []).append((test, *point[1:]))
    return [e for e in (_estimate(key, points) for key, points in groups.items()) if e]


def _estimate(key: tuple[int, int], points: list[tuple[dict, float, float, float]]) -> dict | None:
    contexts = [context for _, context, _, _ in points]
    fit = linear_fit(contexts, [measured - ceiling for _, _, measured, ceiling in points])
    if fit is None or fit["intercept"] <= 0:
        return None
    fixed, (n_gen, batch) = fit["intercept"], key
    depths = sorted({int(t.get("depth") or 0) for t, *_ in points})
    first = points[0][0].get("ceilings") or {}
    tests = {}
    for test, _, measured, ceiling in points:
        bound = batch / (fixed + ceiling)
        binding = (test.get("ceilings") or {}).get("phases", {}).get("decode", {}).get("bound")
        tests[test["name"]] = {"bound": bound, "fixed": fixed, "at_ceiling": ceiling,
                               "binding": OVERHEAD if fixed > ceiling else binding,
                               "measured": batch / measured, "fraction": (batch / measured) / bound}
    return {"n_gen": n_gen, "batch": batch, "fixed": fixed, "fixed_se": fit["intercept_se"],
            "per_context": fit["slope"], "depths": depths, "bandwidth": first.get("bandwidth"),
            "source": first.get("source"), "alone": batch / fixed, "tests": tests,
            "method": method(len(depths), first.get("bandwidth"))}


def method(n_depths: int, bandwidth: float | None) -> str:
    reads = f"memory reads at {fmt_si(bandwidth, 'B/s')}" if bandwidth else "reads"
    return (f"from the depth sweep's intercept, {n_depths} depths: each tg test's time per token beyond its ceiling "
            f"({reads}), fitted against depth and read at depth 0")


def _ms(seconds: float, digits: int = 3) -> str:
    return f"{seconds * 1e3:.{digits}g} ms"


def per_token(estimate: dict) -> str:
    return "per token" if estimate["batch"] == 1 else f"per step of {estimate['batch']} tokens"


def lines(run: dict) -> list[tuple[str, str]]:
    """(name, text): each estimate, then each test it bounds; the one wording of the terminal and the run page."""
    out = []
    for e in fixed_cost(run):
        spread = f" ± {_ms(e['fixed_se'], 2)}" if e.get("fixed_se") else ""
        out.append((f"fixed cost {per_token(e)}",
                    f"{_ms(e['fixed'])}{spread} ({e['method']}); alone it allows {e['alone']:,.0f} t/s"))
        for name, t in e["tests"].items():
            fixed, reads = f"{_ms(t['fixed'])} {per_token(e)} of fixed cost (launches, synchronisation)", \
                f"{_ms(t['at_ceiling'])} of reads at the ceiling"
            head = f"overhead-bound: {fixed} beside {reads}" if t["binding"] == OVERHEAD else \
                f"{t['binding'] or 'ceiling'}-bound: {reads} beside {fixed}"
            out.append((name, f"{head}; with both: {t['bound']:,.0f} t/s, reached {t['fraction']:.0%}"))
    return out


def notes(run: dict) -> dict[str, str]:
    """A short note per tg test the fixed cost binds, for the bench table's notes column."""
    return {name: f"overhead-bound: {_ms(t['fixed'])}/{'token' if e['batch'] == 1 else 'step'}"
            for e in fixed_cost(run) for name, t in e["tests"].items() if t["binding"] == OVERHEAD}
