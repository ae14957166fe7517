"""Server-configuration sweeps (serve-bench --server-grid, pdx.domain.serving.grid): the grid's one-line
errors, the Pareto front (pdx.domain.serving.pareto), and a real two-by-two sweep of llama-server: four
runs, a resumed sweep that skips the finished ones, and the site's sweep page drawing the front."""

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdx.contract.errors import PdxError
from pdx.plugins.llamacpp.server import LlamaServer
from pdx.plugins.vllm.server import VllmServer
from pdx.domain.serving import grid, pareto
from pdx.domain.synth import get_shape, write_gguf

from conftest import pdx_here, run_pdx, run_pdx_here

KEYS = LlamaServer.grid_keys


def test_a_grid_gives_every_combination_and_the_flags_of_each():
    found = grid.read_grid("np=4,8,16; fa=on,off", KEYS)
    assert found == {"np": ["4", "8", "16"], "fa": ["on", "off"]}
    combos = grid.combinations(found)
    assert len(combos) == 6 and {"np": "16", "fa": "off"} in combos
    assert grid.server_flags({"np": "8", "kvu": "off"}, KEYS) == ["--parallel", "8", "--no-kv-unified"]
    assert grid.server_flags({"np": "8", "pc": "on"}, VllmServer.grid_keys) == ["--max-num-seqs", "8",
                                                                                "--enable-prefix-caching"]
    # the order is shuffled, and the same for the same sweep (a resumed one)
    assert sorted(map(str, grid.interleaved(combos, 7))) == sorted(map(str, combos))
    assert grid.interleaved(combos, 7) == grid.interleaved(combos, 7)
    tags = grid.tags("0123abcd", {"np": "4", "fa": "on"})
    assert grid.sweep_of(tags) == "0123abcd" and grid.settings(tags) == {"np": "4", "fa": "on"}


def test_a_grid_file_reads_one_key_a_line(tmp_path):
    path = tmp_path / "grid.txt"
    path.write_text("# the slots\nnp=2,4\n\nfa=on,off  # both\n")
    assert grid.read_grid(str(path), KEYS) == {"np": ["2", "4"], "fa": ["on", "off"]}


@pytest.mark.parametrize("text, said", [
    ("zz=1", "unknown key 'zz'"), ("np=", "np has an empty value"), ("np=4,,8", "np has an empty value"),
    ("np=4;np=8", "np is given twice"), ("kvu=maybe", "kvu is a switch"), ("np 4", "is not KEY=V,V"),
    (";", "no KEY=V,V given"), ("np=4 8", "is no flag value"), ("np=4,4", "repeats a value"),
    ("missing.txt", "no file missing.txt"),
])
def test_a_bad_grid_is_one_line_naming_what_is_wrong(text, said):
    with pytest.raises(PdxError) as caught:
        grid.read_grid(text, KEYS)
    assert said in caught.value.message and "\n" not in str(caught.value)


def test_the_cli_refuses_a_bad_grid_in_one_line(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    result = run_pdx_here("serve-bench", "--backend", "llamacpp-server", "--server-grid", "np=4;zz=1",
                          "--registry", url)
    assert result.returncode != 0 and "unknown key 'zz'" in result.stderr and "np, " in result.stderr
    result = run_pdx_here("serve-bench", "--backend", "llamacpp-server", "--server-grid", "np=4",
                          "--url", "http://127.0.0.1:9", "--registry", url)
    assert result.returncode != 0 and "leave --url out" in result.stderr
    result = run_pdx_here("serve-bench", "--backend", "llamacpp-server", "--server-grid", "np=4",
                          "--sweep", "not-an-id", "--registry", url)
    assert result.returncode != 0 and "not a sweep id" in result.stderr


@given(st.text(max_size=60))
def test_any_text_is_a_grid_or_a_one_line_error(text):
    try:
        found = grid.parse_grid(text, KEYS)
    except PdxError as exc:
        assert "\n" not in str(exc)
    else:
        assert found and set(found) <= set(KEYS) and all(found.values())


values = st.lists(st.from_regex(r"[a-z0-9][a-z0-9.]{0,5}", fullmatch=True), min_size=1, max_size=3, unique=True)


@given(st.dictionaries(st.sampled_from(["np", "c", "b", "ub", "ctk"]), values, min_size=1, max_size=3))
def test_a_written_grid_reads_back_as_it_was(written):
    text = ";".join(f"{k}={','.join(v)}" for k, v in written.items())
    assert grid.parse_grid(text, KEYS) == written
    assert len(grid.combinations(written)) == len(list(itertools.product(*written.values())))


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
points = st.lists(st.tuples(finite, finite), max_size=30)
senses = st.tuples(st.sampled_from([1, -1]), st.sampled_from([1, -1]))


@given(points, senses)
def test_the_front_holds_every_undominated_point_and_no_other(found, better):
    front = pareto.front(found, better)
    for i, p in enumerate(found):
        beaten = any(pareto.dominates(q, p, better) for q in found)
        assert (i in front) == (not beaten)
    # every point off the front is beaten by one on it
    for i, p in enumerate(found):
        if i not in front:
            assert any(pareto.dominates(found[j], p, better) for j in front)
    assert [found[i][0] for i in front] == sorted(found[i][0] for i in front)


def test_the_front_of_a_plain_trade_off():
    # per user falls as the aggregate rises, but (3, 50) gives less of both than (4, 60)
    found = [(10.0, 20.0), (6.0, 40.0), (3.0, 50.0), (4.0, 60.0), (1.0, 61.0), (float("nan"), 99.0)]
    assert pareto.front(found) == [4, 3, 1, 0]
    assert pareto.front([(1.0, 5.0), (2.0, 9.0)], (1, -1)) == [0, 1]  # lower is better on y: neither beats


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return str(write_gguf(get_shape("tiny"), "f16", tmp_path_factory.mktemp("grid") / "tiny-f16.gguf"))


SWEEP = "5eed0123abcd"


def sweep(registry_url, model, server_grid, *more):
    return run_pdx("serve-bench", "--backend", "llamacpp-server", "-m", model, "--registry", registry_url,
                   "--server-args", "-c 1024", "--server-grid", server_grid, "--sweep", SWEEP,
                   "--concurrency", "2", "-p", "16", "-n", "128", "--num-requests", "4", *more)


@pytest.mark.llamacpp
def test_a_two_by_two_sweep_of_llama_server_resumes_and_draws_its_front(registry_url, tiny_model, tmp_path):
    # A sweep cut short after half its grid: the same sweep with the whole grid runs only the other half.
    first = sweep(registry_url, tiny_model, "np=1,2;cb=on", "--json")
    assert first.returncode == 0, first.stderr
    assert f"sweep {SWEEP}: 2 combinations" in first.stderr
    second = sweep(registry_url, tiny_model, "np=1,2;cb=on,off", "--json")
    assert second.returncode == 0, second.stderr
    assert "4 combinations, 2 already complete (skipped)" in second.stderr
    runs = json.loads(first.stdout) + json.loads(second.stdout)
    assert len(runs) == 4 and all(r["status"] == "complete" for r in runs)
    # each a point: a stream's decode rate needs its tokens in more than one read (128 of them are)
    assert all(r["tests"][0]["stats"]["per_stream_decode_rate"] for r in runs), [r["tests"][0]["stats"] for r in runs]
    settings = {(s := grid.settings(r["tags"]))["np"] + s["cb"] for r in runs}
    assert settings == {"1on", "2on", "1off", "2off"}
    for run in runs:
        s = grid.settings(run["tags"])
        args = run["engine"]["settings"]["server_args"]
        assert f"--parallel {s['np']}" in args and args.startswith("-c 1024")
        assert ("--no-cont-batching" in args) == (s["cb"] == "off") and grid.sweep_of(run["tags"]) == SWEEP
    again = sweep(registry_url, tiny_model, "np=1,2;cb=on,off")
    assert again.returncode == 0 and "nothing is left to run" in again.stderr
    table = " ".join(again.stdout.split())  # the terminal's view: every configuration, the front marked
    assert "on the front" in table and all(r["id"][:12] in table for r in runs)

    site = tmp_path / "site"
    pdx_here("publish", str(site), "--registry", registry_url)
    assert f"sweeps/{SWEEP}.html" in (site / "sweeps.html").read_text()
    page = site / "sweeps" / f"{SWEEP}.html"
    html, data = page.read_text(), json.loads(page.with_suffix(".json").read_text())
    assert len(data["points"]) == 4 and not data["left_out"] and data["axes"][0] == "aggregate", data["left_out"]
    front = [p for p in data["points"] if p["front_aggregate"]]
    chart = html[html.index("<svg"):html.index("</svg>")]
    assert front
    for run in runs:  # every point of the chart links to its run's page
        assert f'href="../runs/{run["id"]}.html"' in chart
    for p in front:  # and the front's points are named on it
        assert p["name"] in chart
    report = tmp_path / "report.html"
    pdx_here("report", "-o", str(report), "--registry", registry_url)
    text = report.read_text()
    assert "the Pareto front" in text and all(f'href="#run-{run["id"]}"' in text for run in runs)


def test_the_docs_name_every_metric_and_grid_key_each_engine_reads():
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "serving.md").read_text()
    for cls in (LlamaServer, VllmServer):
        names = {*cls.metric_histograms.values(), *cls.metric_counters.values(),
                 *(n for found in cls.metric_series.values() for n in found)}
        for name in names:
            assert f"`{name}`" in text, f"docs/serving.md does not name {cls.name}'s {name}"
        for key, spec in cls.grid_keys.items():
            assert f"`{key}`" in text and f"`{spec.flag}`" in text, f"docs/serving.md lacks {cls.name}'s {key}"


def test_a_sweep_page_says_which_runs_give_no_point_and_why():
    from pdx.reports.site import sweep_pages

    def run(run_id, status, rate):
        stats = {"completed": 4, "per_stream_decode_rate": rate, "output_throughput": 10.0}
        return {"id": run_id, "status": status, "backend": "llamacpp-server", "tags": grid.tags(SWEEP, {"np": run_id}),
                "tests": [{"name": "c2", "kind": "serve", "stats": stats}]}

    runs = [run("1", "complete", 5.0), run("2", "complete", 4.0), run("3", "complete", None), run("4", "failed", 3.0),
            dict(run("old", "complete", 2.0), tags=grid.tags(SWEEP, {"np": "1"}))]  # np=1 again, older
    (points,) = sweep_pages.sweeps(runs).values()
    assert sorted(p["run"] for p in points) == ["1", "2"]
    missing = {m["run"]: m for m in sweep_pages.left_out(runs, SWEEP, points)}
    assert "decode rate" in missing["3"]["why"] and missing["3"]["name"] == "np=3"
    assert missing["4"]["why"] == "the run is failed" and "newer run" in missing["old"]["why"]


@pytest.mark.llamacpp
def test_a_combination_whose_server_will_not_start_costs_only_itself(registry_url, tiny_model):
    result = run_pdx("serve-bench", "--backend", "llamacpp-server", "-m", tiny_model, "--registry", registry_url,
                     "--json", "--server-args", "-c 1024", "--server-grid", "ctk=f16,nosuchtype", "--concurrency", "1",
                     "-p", "16", "-n", "16", "--num-requests", "2")
    assert result.returncode == 1
    (run,) = json.loads(result.stdout)
    assert grid.settings(run["tags"]) == {"ctk": "f16"} and run["status"] == "complete"
    assert "ctk=nosuchtype: llama-server exited" in result.stderr and "the sweep goes on" in result.stderr
    assert "1 of 2 combinations made no run" in result.stderr
