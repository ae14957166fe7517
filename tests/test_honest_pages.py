"""Pages that must not mislead (issue 26): a chart line per model, machine and engine, named; scales
that fit the data shown; labels that meet no other; comparison pages of runs that share tests; "what
to buy" from a configuration's best run, saying so; a run page with its own charts. No browser here
(tests/test_browser.py measures the pages in Chromium)."""

from __future__ import annotations

import json
import math
import random
import re
from datetime import timedelta
from xml.etree import ElementTree

import pytest

from pdx.registry import Registry
from pdx.reports import comparison, labels
from pdx.reports.charts import chartset
from pdx.reports.charts import runcharts
from pdx.reports.charts import specs as charts
from pdx.reports.charts.render import unsafe_markup
from pdx.reports.site.builder import publish
from pdx.reports.site.leaderboard import leaderboard_chart
from pdx.reports.results import read_runs
from pdx.domain.workload import TestSpec

from runfactory import START, add_run, hardware, model
from test_report_figures import _test, run_dict


class Requests:
    """A renderer that keeps the specs asked of it (charts_for's answer without drawing them)."""

    def __init__(self) -> None:
        self.specs: dict[str, dict] = {}

    def request(self, spec: dict, title: str) -> str:
        self.specs[title] = spec
        return title


def _sweep_run(run_id: str, model_name: str, sha: str, rates: dict[int, float]) -> dict:
    run = run_dict([_test(f"tg16/b{b}" if b > 1 else "tg16", "tg", 0, 16, batch=b, rate=r) for b, r in rates.items()],
                   run_id=run_id)
    run["model"] = {**run["model"], "name": model_name, "sha256": sha}
    return run


def test_two_models_on_one_machine_are_two_named_lines_of_the_batch_chart():
    # A report of many runs names series by system (machine and engine): two models of one machine
    # and engine were one series, their batch points joined into one line with no legend.
    runs = [_sweep_run("a" * 32, "llama-8b", "1" * 64, {1: 50.0, 2: 90.0, 4: 150.0}),
            _sweep_run("b" * 32, "qwen-1b", "2" * 64, {1: 200.0, 8: 900.0})]
    requests = Requests()
    chartset.charts_for(runs, requests, labels.system_label, {})
    spec = requests.specs["Decode rate vs batch"]
    lines = spec["layer"][0]
    series = {}
    for point in lines["data"]["values"]:
        series.setdefault(point["series"], []).append(point["batch"])
    assert len(series) == 2
    names = sorted(series)
    assert any("llama-8b" in n for n in names) and any("qwen-1b" in n for n in names)
    assert sorted(series[next(n for n in names if "llama-8b" in n)]) == [1, 2, 4]
    assert sorted(series[next(n for n in names if "qwen-1b" in n)]) == [1, 8]
    assert lines["encoding"]["color"]["legend"] is not None  # the lines are named


def test_a_single_line_is_named_too_and_two_models_of_one_name_are_told_apart():
    one = _sweep_run("a" * 32, "m", "1" * 64, {1: 50.0, 2: 90.0})
    assert charts._series_colour([{"series": labels.system_label(one)}])["legend"] is not None
    twin = _sweep_run("b" * 32, "m", "2" * 64, {1: 60.0, 2: 100.0})
    namer = labels.series_namer([one, twin], labels.system_label)
    assert namer(one) != namer(twin)
    assert namer(one).startswith(labels.system_label(one))
    # Runs that differ in nothing a chart tells apart keep the page's own names.
    again = _sweep_run("c" * 32, "m", "1" * 64, {1: 55.0})
    assert labels.series_namer([one, again], labels.system_label) is labels.system_label


def _bars(rates: dict[str, float], ceiling: float | None = None) -> list[dict]:
    return [{"label": label, "series": "", "phase": "decode", "rate": rate, "lo": rate * 0.95, "hi": rate * 1.05,
             "ceiling": ceiling, "note": f"{rate / ceiling:.0%} of memory bound" if ceiling else None}
            for label, rate in rates.items()]


def _px(scale: dict, width: float, value: float) -> float:
    lo, hi = scale["domain"]
    if scale.get("type") == "log":
        return width * (math.log10(value) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    return width * value / hi


def test_an_outlier_does_not_leave_the_other_bars_slivers():
    # One configuration 400 times faster than the rest: on a linear axis from 0 the rest are a
    # pixel or two. The panel's scale turns logarithmic and its axis says so.
    bars = _bars({"H100 · llama": 20_000.0, "CPU · llama": 50.0, "CPU · qwen": 80.0})
    scale, axis, floor = charts.rate_scale(bars, charts.WIDTH)
    assert scale["type"] == "log" and "log scale" in axis["title"] and floor and floor <= 50.0
    smallest = _px(scale, charts.WIDTH, 50.0) - _px(scale, charts.WIDTH, floor)
    assert smallest > charts.WIDTH * 0.05, smallest
    # Figures of one order of magnitude keep a linear axis from zero.
    scale, axis, floor = charts.rate_scale(_bars({"a": 50.0, "b": 80.0}), charts.WIDTH)
    assert scale.get("type") is None and scale["domain"][0] == 0 and floor is None and "log" not in axis["title"]


def test_the_index_chart_of_an_outlier_draws_every_bar_visibly():
    board = []
    for name, rate in (("NVIDIA H100 SXM", 20_000.0), ("Intel Core i5", 50.0), ("AMD Ryzen 5", 80.0)):
        run = run_dict([_test("tg128", "tg", 0, 128, rate=rate)], run_id=name[:4].ljust(32, "0"))
        from pdx.reports.rows import run_rows

        board.append({"hardware": {"name": name}, "model": {"name": "llama"}, "backend": "llamacpp",
                      "decode": {"row": run_rows(run)[0]}})
    requests = Requests()
    chart = leaderboard_chart(board, requests)
    spec = requests.specs[chart.title]
    import vl_convert

    svg = vl_convert.vegalite_to_svg(spec)
    decode = charts.PHASE_COLOURS["decode"]
    bar = rf'<path d="M[\d.-]+,[\d.-]+h([\d.]+)v[\d.]+h-[\d.]+Z" fill="{decode}"'
    widths = [float(w) for w in re.findall(bar, svg)]
    assert len(widths) == 3
    assert min(widths) > 0.05 * max(widths), widths  # no sliver: the small bars read


def test_a_bars_note_follows_its_ceiling_and_stays_in_the_panel():
    bars = _bars({"tg128": 40.0, "tg128@d4096": 30.0, "tg128/b8": 240.0}, ceiling=300.0)
    width = charts.WIDTH // 2 - 20
    scale, _, _ = charts.rate_scale(bars, width)
    for bar in bars:
        end = max(bar["rate"], bar["ceiling"], bar["hi"])
        right = _px(scale, width, end) + 4 + charts.text_width(bar["note"], charts.NOTE_SIZE)
        assert right <= width, bar
    spec = charts.phase_bars(bars, "test")
    notes = next(layer for layer in spec["vconcat"][0]["layer"] if layer["mark"]["type"] == "text")
    assert notes["encoding"]["x"]["field"] == "note_at"  # after the ceiling's edge, not across it
    assert "datum.ceiling" in notes["transform"][1]["calculate"]


def _overlap(a: tuple, b: tuple) -> bool:
    return min(a[1], b[1]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[2], b[2]) > 0.5


def test_knee_labels_take_rows_that_do_not_collide():
    knees = [{"series": s, "batch": b, "kind": k} for s in ("llama · cpu", "qwen · cpu")
             for b, k in ((4, "measured knee"), (4, "predicted knee"))]
    knees = [{**k, "label": f"{k['kind']}: {k['series']}"} for k in knees]
    placed = charts.knee_rows(knees, [1, 2, 4, 8, 16], charts.WIDTH)
    boxes = []
    for k in placed:
        x = charts.WIDTH * 2 / 4  # batch 4 of 1..16 on a log2 axis
        w = charts.text_width(k["label"], charts.KNEE_SIZE)
        left, right = (x - 4 - w, x - 4) if k["align"] == "right" else (x + 4, x + 4 + w)
        boxes.append((left, right, k["y"], k["y"] + charts.KNEE_SIZE))
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), boxes
    spec = charts.batch_sweep([{"series": s, "batch": b, "aggregate": 10.0 * b, "per_sequence": 10.0}
                               for s in ("llama · cpu", "qwen · cpu") for b in (1, 2, 4, 8, 16)], knees)
    texts = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    ys = [k["y"] for layer in texts for k in layer["data"]["values"]]
    assert len(set(ys)) == len(ys) == 4  # four labels at one batch: four rows


def _registry(tmp_path) -> Registry:
    return Registry(f"sqlite:///{tmp_path}/r.sqlite")


def test_a_comparison_pairs_runs_that_share_tests(tmp_path):
    registry = _registry(tmp_path)
    rng = random.Random(3)
    cpu, mdl = hardware("Intel Core i5-1135G7", 11), model("llama-0-8b-q4_0", 1)
    full = [TestSpec(512, 0), TestSpec(0, 128)]
    older = add_run(registry, cpu, mdl, "llamacpp-bench", START, rng, tests=full)
    base = add_run(registry, cpu, mdl, "llamacpp-bench", START + timedelta(hours=1), rng, tests=full)
    new = add_run(registry, cpu, mdl, "llamacpp-bench", START + timedelta(hours=2), rng, tests=full)
    odd = add_run(registry, cpu, mdl, "llamacpp-bench", START + timedelta(hours=3), rng, tests=[TestSpec(64, 0)])
    # A second configuration whose two runs share no test: no comparison page at all.
    other = model("qwen-1-1b-q4_0", 2)
    add_run(registry, cpu, other, "llamacpp-bench", START, rng, tests=[TestSpec(512, 0)])
    add_run(registry, cpu, other, "llamacpp-bench", START + timedelta(hours=1), rng, tests=[TestSpec(0, 128)])
    runs = read_runs(registry, samples=True)
    registry.close()
    assert comparison.comparable_pair([r for r in runs if r["model"]["name"] == "qwen-1-1b-q4_0"]) is None
    publish(runs, tmp_path / "site", title="pairs")
    pages = sorted((tmp_path / "site" / "compare").glob("*.json"))
    assert len(pages) == 1  # the configuration whose runs share no test has none
    data = json.loads(pages[0].read_text())
    assert (data["new"], data["baseline"]) == (new, base) and older not in (data["new"], data["baseline"])
    assert {line["test"] for line in data["tests"]} == {"pp512", "tg128"}
    assert all(line["verdict"] != "not compared" for line in data["tests"])
    assert data["passed_over"] == [odd]
    html = pages[0].with_suffix(".html").read_text()
    assert odd[:8] in html and "measured no test that the new run here measured" in html
    index = json.loads((tmp_path / "site" / "index.json").read_text())
    assert len(index["comparisons"]) == 1


def test_what_to_buy_uses_a_configurations_best_run_and_says_so(tmp_path):
    registry = _registry(tmp_path)
    rng = random.Random(5)
    cpu, mdl = hardware("Intel Core i5-1135G7", 11), model("llama-0-8b-q4_0", 1)
    tests = [TestSpec(512, 0), TestSpec(0, 128)]
    best = add_run(registry, cpu, mdl, "llamacpp-bench", START, rng, tests=tests, speed=2.6)
    add_run(registry, cpu, mdl, "llamacpp-bench", START + timedelta(hours=1), rng, tests=tests, speed=2.4)
    noisy = add_run(registry, cpu, mdl, "llamacpp-bench", START + timedelta(hours=2), rng, tests=tests, speed=0.3)
    runs = read_runs(registry, samples=True)
    registry.close()
    publish(runs, tmp_path / "site", title="buy")
    data = json.loads((tmp_path / "site" / "buy.json").read_text())
    (machine,) = data["models"][0]["machines"]
    assert machine["run"] == best != noisy
    by_id = {r["id"]: r for r in runs}
    tg = next(t for t in by_id[best]["tests"] if t["name"] == "tg128")
    assert machine["decode"]["rate"] == pytest.approx(tg["stats"]["rate"]["mean"])
    assert machine["decode"]["rate"] > 100 and machine["chosen"] == {"by": "best", "of": 3}
    html = (tmp_path / "site" / "buy.html").read_text()
    assert "best run" in html and "highest decode rate" in html
    assert "from run" in html  # the column that links the run and says how many it was chosen from


def _text_boxes(svg: str) -> list[tuple]:
    """Each <text>'s estimated box (x0, x1, y0, y1) as Arial sets it."""
    boxes = []
    for element in ElementTree.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"):
        size, x, y = float(element.get("font-size")), float(element.get("x")), float(element.get("y"))
        w = charts.text_width(element.text or "", size)
        x0 = {"start": x, "middle": x - w / 2, "end": x - w}[element.get("text-anchor")]
        y0 = y if element.get("dominant-baseline") == "hanging" else y - size / 2
        boxes.append((x0, x0 + w, y0, y0 + size, element.text))
    return boxes


def test_a_run_page_has_its_charts_as_svg(tmp_path):
    registry = _registry(tmp_path)
    rng = random.Random(9)
    tests = [TestSpec(512, 0), TestSpec(0, 128), TestSpec(512, 0, depth=4096), TestSpec(0, 128, depth=4096),
             TestSpec(0, 128, batch=2), TestSpec(0, 128, batch=8)]
    run_id = add_run(registry, hardware("NVIDIA H100 SXM", 2), model("llama-0-8b-q4_0", 1), "llamacpp-bench", START,
                     rng, tests=tests)
    runs = read_runs(registry, samples=True)
    registry.close()
    publish(runs, tmp_path / "site", title="run charts")
    html = (tmp_path / "site" / "runs" / f"{run_id}.html").read_text()
    svgs = re.findall(r'<svg class="chart".*?</svg>', html, flags=re.S)
    assert len(svgs) == 3
    for title in ("Measured vs ceiling, per phase", "Rate vs context depth", "Decode rate vs batch"):
        assert title in html
    for svg in svgs:
        assert unsafe_markup(svg) is None
        boxes = _text_boxes(svg)
        assert len(boxes) > 5
        clashes = [(a[4], b[4]) for i, a in enumerate(boxes) for b in boxes[i + 1:] if _overlap(a, b)]
        assert not clashes, clashes
    # The bars' notes say the fraction of the ceiling; the batch chart names its knee.
    assert "of memory bound" in svgs[0] and "measured knee" in svgs[2]


def test_a_run_charts_text_is_escaped():
    run = run_dict([_test("<b>pp64</b>", "pp", 64, 0, rate=300.0), _test("tg16", "tg", 0, 16, rate=30.0)])
    (chart,) = runcharts.run_charts(run)
    assert "<b>" not in chart.svg and "&lt;b&gt;pp64&lt;/b&gt;" in chart.svg
    assert unsafe_markup(str(chart.svg)) is None
