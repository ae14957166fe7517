"""llama-server's log imported (issue 29): a public log of a speculating server (tests/data/
llama_server_log_pr24536_eagle3.txt, its source on its first line) and one the real llama-server wrote
here for pdx (llama_server_log_synth_spec.txt: `tests/benchmarks/speculation.py`'s case (c), a 200m
target, a tiny draft, --spec-synth-len 3), each request a sample, the drafts kept."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdx.contract.errors import ImportFileError
from pdx.registry.importers import llama_server_log

from conftest import assert_one_line_error, pdx_here, pdx_import, run_pdx_here, show
from test_importers import DATA

PUBLIC = DATA / "llama_server_log_pr24536_eagle3.txt"
RECORDED = DATA / "llama_server_log_synth_spec.txt"


def _imported(registry_url, path, *args) -> dict:
    (run_id,) = pdx_import(registry_url, path, *args)["added"]
    return show(registry_url, run_id)


def test_a_public_log_of_an_eagle3_server_keeps_its_method_and_acceptance(registry_url):
    run = _imported(registry_url, PUBLIC)
    assert run["origin"] == "llama-server log" and run["backend"] == "llamacpp-server"
    spec = run["engine"]["settings"]["speculation"]
    assert spec["method"] == "draft-eagle3" and "note" not in spec
    pp, tg = run["tests"]
    assert (pp["name"], tg["name"]) == ("pp20", "tg256")
    assert pp["stats"]["rate"]["mean"] == pytest.approx(20 / 0.30011)  # 66.64 t/s, as the log says
    assert tg["stats"]["rate"]["mean"] == pytest.approx(256 / 2.29672)
    found = tg["stats"]["speculation"]
    assert (found["drafted"], found["accepted"], found["tokens"]) == (259, 167, 256)
    assert found["acceptance"] == pytest.approx(0.64479, abs=5e-6)  # the log's own "draft acceptance"
    assert found["tokens_per_pass"] == pytest.approx(256 / (256 - 167))
    assert "tg256: speculative decoding, 167 of 259 drafted tokens accepted (64%)" in pdx_here(
        "show", run["id"], "--registry", registry_url)


def test_a_log_the_real_server_wrote_sums_each_request_and_names_its_synthetic_acceptance(registry_url, tiny_gguf):
    run = _imported(registry_url, RECORDED, "-m", str(tiny_gguf), "--hardware", "rtx 4090")
    spec = run["engine"]["settings"]["speculation"]
    assert spec["method"] is None and "--spec-synth-len" in spec["note"]
    assert spec["draft_model"]["name"] == "draft"
    (pp, tg) = run["tests"]
    assert (pp["name"], tg["name"]) == ("pp1", "tg129") and len(tg["samples"]) == 4
    per_request = [s["engine"]["speculation"] for s in tg["samples"]]
    assert [c["accepted"] for c in per_request] == [84, 83, 85, 87]
    assert tg["stats"]["speculation"]["drafted"] == sum(c["drafted"] for c in per_request)
    decode = tg["ceilings"]["phases"]["decode"]
    assert decode["speculative"]["target_passes_per_token"] == pytest.approx(
        tg["stats"]["speculation"]["target_passes_per_token"])
    assert not decode["speculative"]["draft_counted"]  # the log names the draft's path, not its size


def test_a_log_without_finished_requests_is_one_line(tmp_path, registry_url):
    path = tmp_path / "server.log"
    path.write_text("0.00.001 I slot print_timing: id  1 | task 0 | prompt eval time =  3.0 ms /  4 tokens\n")
    assert_one_line_error(run_pdx_here("import", str(path), "--format", "llama-server-log", "--registry",
                                       registry_url), "no request with both")


_LINES = st.sampled_from([
    "slot print_timing: id  1 | task {t} | prompt eval time = {f} ms / {n} tokens ( 1 ms per token, 1 tokens per "
                          "second)",
    "slot print_timing: id  1 | task {t} |        eval time = {f} ms / {n} tokens ( 1 ms per token, 1 tokens per "
                          "second)",
    "slot print_timing: id  1 | task {t} | draft acceptance = 0.5 ( {n} accepted / {m} generated), mean len = 2",
    "statistics     draft-{w}: #calls", "load_model: loading model '{w}'", "slot print_timing: id 1 | task {t} | {w}",
])


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_LINES, st.integers(0, 3), st.one_of(st.integers(-5, 10**30), st.floats()),
                          st.integers(-3, 10**12), st.integers(-3, 10**12), st.text(max_size=12)), max_size=12))
def test_any_mix_of_log_lines_reads_or_is_refused_in_one_line(tmp_path_factory, lines):
    text = "\n".join(line.format(t=t, f=f, n=n, m=m, w=w) for line, t, f, n, m, w in lines)
    path = tmp_path_factory.mktemp("log") / "server.log"
    path.write_text(text, errors="surrogatepass")
    try:
        runs = llama_server_log.read(path, text)
    except ImportFileError as exc:
        assert "\n" not in str(exc)
        return
    for test in runs[0]["tests"]:
        assert all(s["ns"] > 0 for s in test["samples"])
        for s in test["samples"]:
            counts = s["engine"].get("speculation")
            assert counts is None or 0 <= counts["accepted"] <= counts["drafted"]


def _log(*requests: tuple[str, str, str, str], model: str = "/m/target.gguf") -> str:
    """A llama-server log: its model line, then per request (task, prompt eval line, eval line, draft line)."""
    lines = [f"srv    load_model: loading model '{model}'"]
    for task, prompt, evaluated, draft in requests:
        lines += [f"slot print_timing: id  1 | task {task} | prompt eval time = {prompt} tokens",
                  f"slot print_timing: id  1 | task {task} |        eval time = {evaluated} tokens"]
        if draft:
            lines.append(f"slot print_timing: id  1 | task {task} | draft acceptance = 0.5 ({draft} generated)")
    return "\n".join(lines) + "\n"


GOOD = ("0", "300.11 ms /    20", "2296.72 ms /   256", "167 accepted /   259")


def test_a_restarted_server_s_repeated_task_id_keeps_both_requests(tmp_path, registry_url):
    """Two finished requests with one task id (the server restarted and counted from 0 again): both are
    samples, neither dropped."""
    path = tmp_path / "server.log"
    path.write_text(_log(GOOD, ("0", "310.00 ms /    20", "2300.00 ms /   256", "160 accepted /   259")))
    run = _imported(registry_url, path)
    pp, tg = run["tests"]
    assert len(pp["samples"]) == 2 and len(tg["samples"]) == 2
    assert [s["engine"]["speculation"]["accepted"] for s in tg["samples"]] == [167, 160]


@pytest.mark.parametrize("request_, needle", [
    (("0", "300.11 ms /    20", "2296.72 ms /   256", "500 accepted /   170"),
     "line 4: 500 accepted of 170 drafted tokens"),
    (("0", "300.11 ms /    20", "2296.72 ms /   256", "7 accepted /   -5"), "line 4: draft tokens is -5.0"),
    (("0", "300.11 ms /    20", "2296.72 ms /   256", "7 accepted /   nan"), "line 4: draft tokens is nan"),
    (("0", "300.11 ms /    "
      "20", "2296.72 ms /   256", "7.5 accepted /   9"), "line 4: draft tokens is 7.5, not a whole"),
    (("0", "300.11 ms /    20", "0.00 ms /   256", ""), "line 3: eval time is 0.00 ms for 256 tokens"),
    (("0", "300.11 ms /    -20", "2296.72 ms /   256", ""), "line 2: prompt eval tokens is -20.0"),
])
def test_an_impossible_figure_in_a_log_is_refused_naming_its_line(tmp_path, registry_url, request_, needle):
    """Each was clamped or dropped without a word (accepted above drafted clamped to drafted, a negative,
    NaN or fractional count dropping the line, a zero eval time dropping the whole tg test)."""
    path = tmp_path / "server.log"
    path.write_text(_log(request_))
    assert_one_line_error(run_pdx_here("import", str(path), "--registry", registry_url), needle)


def test_a_nul_byte_in_the_model_s_name_is_refused_not_cut_short(tmp_path, registry_url):
    path = tmp_path / "server.log"
    path.write_text(_log(GOOD, model="/m/tar\x00get.gguf"))
    assert_one_line_error(run_pdx_here("import", str(path), "--registry", registry_url),
                          "line 1: the model's name", "holds a control character")
