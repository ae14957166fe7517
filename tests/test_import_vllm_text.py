"""``vllm bench serve``'s printed result, as people paste it into issues (tests/data/README.md names
where each recorded paste comes from): it imports as the run its ``--save-result`` JSON would be,
with the printed figures; a truncated or garbled block is a one-line error that stores nothing."""

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import assert_one_line_error, pdx_here, pdx_import, run_pdx_here, show

DATA = Path(__file__).parent / "data"
PASTES = sorted(DATA.glob("vllm_bench_serve_printed_*.txt"))
FORMAT = "vllm-bench-serve-text"

# What each paste says beside its figures: the test of each of its blocks (its load, from the block, the
# log lines or the command line before it), and the model its command line names.
EXPECTED = {
    # "Traffic request rate: inf" and "Maximum request concurrency: 30" logged before the block; no command.
    "vllm_bench_serve_printed_issue9722.txt": [("c30:p777+g6:n100", "?")],
    # The cap printed in the block itself, an annotation ("<========") after a figure.
    "vllm_bench_serve_printed_pr31826_tp2.txt": [("c8:p215+g199:n1000", "?")],
    # `vllm bench serve --model ... --random-input-len 1024 --random-output-len 350`: the lengths asked for.
    "vllm_bench_serve_printed_pr33743_gemma.txt": [("rinf:p1024+g350:n16", "gemma-3-27b-it")],
    # Two `benchmark_serving.py` commands continued over `\` line ends, each before its block, server logs after.
    "vllm_bench_serve_printed_dennislee22_qwen2_7b.txt": [("rinf:p1024+g1024:n10", "Qwen2-7B-Instruct"),
                                                          ("rinf:p4096+g4096:n10", "Qwen2-7B-Instruct")],
}

_FIGURE = re.compile(r"^(Mean|Median|P[\d.]+) (TTFT|TPOT|ITL|E2EL) \(ms\):\s+([\d.]+)")
_TOTALS = {"Successful requests:": "completed", "Request throughput (req/s):": "request_throughput",
           "Output token throughput (tok/s):": "output_throughput",
           "Total token throughput (tok/s):": "total_token_throughput"}


def _printed_figures(text: str) -> list[dict]:
    """Each block's figures read straight off the text, keyed as pdx's serving stats are."""
    blocks = []
    for line in text.splitlines():
        if "Serving Benchmark Result" in line:
            blocks.append({})
        elif blocks and (match := _FIGURE.match(line)):
            blocks[-1].setdefault(f"{match[2].lower()}_ms", {})[match[1].lower()] = float(match[3])
        elif blocks:
            for label, key in _TOTALS.items():
                if line.lower().startswith(label.lower()):
                    blocks[-1][key] = float(line[len(label):].split()[0])
    return blocks


def test_the_recorded_pastes_are_all_expected():
    assert len(PASTES) >= 3 and {p.name for p in PASTES} == set(EXPECTED)
    assert all(p.read_text().startswith("Source: https://github.com/") for p in PASTES)


@pytest.mark.parametrize("paste", PASTES, ids=lambda p: p.stem)
def test_a_recorded_paste_imports_with_its_printed_figures(registry_url, paste):
    done = pdx_import(registry_url, paste)
    assert done["format"] == FORMAT and len(done["added"]) == len(EXPECTED[paste.name])
    printed = _printed_figures(paste.read_text())
    assert len(printed) == len(done["added"])
    for run_id, figures, (name, model) in zip(done["added"], printed, EXPECTED[paste.name]):
        run = show(registry_url, run_id)
        assert run["origin"] == "vllm-bench-serve" and run["backend"] == "vllm" and run["status"] == "complete"
        assert run["provenance"]["format"] == FORMAT and run["model"]["name"] == model
        (test,) = run["tests"]
        assert test["kind"] == "serve" and test["name"] == name and test["requests"] == []
        stats = test["stats"]
        assert stats["reported"]
        for key, value in figures.items():
            if isinstance(value, dict):
                for stat, figure in value.items():
                    assert stats[key][stat] == figure, (key, stat)
            else:
                assert stats[key] == value, key
        shown = pdx_here("show", run_id, "--registry", registry_url)
        assert "(as reported)" in shown and f"{figures['ttft_ms']['median']:.1f}" in shown
    assert pdx_import(registry_url, paste)["added"] == []  # twice adds nothing


def _printed(document: dict) -> str:
    """A result as vLLM prints it (vllm/benchmarks/serve.py's formats: "{:<40} {:<10}", "{:<10.2f}",
    centred section rules, a closing rule of 50 "="), from the keys of its --save-result JSON."""
    def line(label, value):
        return f"{label:<40} {value:<10.2f}" if isinstance(value, float) else f"{label:<40} {value:<10}"

    out = [f"{' Serving Benchmark Result ':=^50}", line("Successful requests:", document["completed"])]
    if "failed" in document:
        out.append(line("Failed requests:", document["failed"]))
    if document.get("max_concurrency") is not None:
        out.append(line("Maximum request concurrency:", document["max_concurrency"]))
    if document.get("request_rate", "inf") != "inf":
        out.append(line("Request rate configured (RPS):", float(document["request_rate"])))
    out += [line("Benchmark duration (s):", float(document["duration"])),
            line("Total input tokens:", document["total_input_tokens"]),
            line("Total generated tokens:", document["total_output_tokens"]),
            line("Request throughput (req/s):", float(document["request_throughput"]))]
    if document.get("request_goodput") is not None:
        out.append(line("Request goodput (req/s):", float(document["request_goodput"])))
    out.append(line("Output token throughput (tok/s):", float(document["output_throughput"])))
    if "max_output_tokens_per_s" in document:
        out += [line("Peak output token throughput (tok/s):", float(document["max_output_tokens_per_s"])),
                line("Peak concurrent requests:", float(document["max_concurrent_requests"]))]
    out.append(line("Total token throughput (tok/s):", float(document["total_token_throughput"])))
    for metric, name, header in (("ttft", "TTFT", "Time to First Token"),
                                 ("tpot", "TPOT", "Time per Output Token (excl. 1st token)"),
                                 ("itl", "ITL", "Inter-token Latency"), ("e2el", "E2EL", "End-to-end Latency")):
        if f"mean_{metric}_ms" not in document:
            continue
        out += [f"{header:-^50}", line(f"Mean {name} (ms):", float(document[f"mean_{metric}_ms"])),
                line(f"Median {name} (ms):", float(document[f"median_{metric}_ms"]))]
        for key, value in document.items():
            if (match := re.fullmatch(rf"p([\d.]+)_{metric}_ms", key)):
                out.append(line(f"P{match[1]} {name} (ms):", float(value)))
    return "\n".join([*out, "=" * 50, ""])


def test_a_printed_result_is_the_run_of_its_json(registry_url, tmp_path):
    """No real pair of a printed result and its JSON is recorded, so the printed block here is DERIVED
    from tests/data/vllm_bench_serve_summary.json (a real recording), printed as vLLM prints: both
    import as the same test, whose figures agree to the two decimals vLLM prints."""
    document = json.loads((DATA / "vllm_bench_serve_summary.json").read_text())
    paste = tmp_path / "printed.txt"
    paste.write_text(_printed(document))
    (from_json,) = show(registry_url, pdx_import(registry_url, DATA / "vllm_bench_serve_summary.json")["added"][0])[
        "tests"]
    done = pdx_import(registry_url, paste)
    assert done["format"] == FORMAT
    run = show(registry_url, done["added"][0])
    (from_text,) = run["tests"]
    assert run["origin"] == "vllm-bench-serve" and run["backend"] == "vllm"
    for key in ("name", "kind", "n_prompt", "n_gen", "spec", "status", "error", "requests"):
        assert from_text[key] == from_json[key], key
    ours, theirs = from_text["stats"], from_json["stats"]
    assert ours["completed"] == theirs["completed"] and ours["failed"] == theirs["failed"]
    for key in ("request_throughput", "output_throughput", "total_token_throughput"):
        assert ours[key] == pytest.approx(theirs[key], abs=0.005)
    for metric in ("ttft_ms", "tpot_ms", "itl_ms"):
        assert set(ours[metric]) == set(theirs[metric]) - {"std"}  # vLLM prints no standard deviation
        for stat, value in ours[metric].items():
            assert value == pytest.approx(theirs[metric][stat], abs=0.005), (metric, stat)
    # Every figure of the block lands under the key the JSON gives it.
    figures = {k: v for k, v in from_text["engine"].items() if k != "reported"}
    assert set(figures) <= set(from_json["engine"])
    for key, value in figures.items():
        assert value == pytest.approx(from_json["engine"][key], abs=0.005), key


def _damaged(tmp_path, text):
    path = tmp_path / "pasted.txt"
    path.write_text(text)
    return path


def assert_nothing_stored(registry_url):
    assert json.loads(pdx_here("runs", "--registry", registry_url, "--json")) == []


GEMMA = DATA / "vllm_bench_serve_printed_pr33743_gemma.txt"


@pytest.mark.parametrize("damage, needles", [
    (lambda t: t[: len(t) * 2 // 3], ("truncated",)),
    (lambda t: t.replace("2633.55", "26.33.55"), ("line 17 (Mean TTFT (ms)) is '26.33.55', not a number",)),
    (lambda t: t.replace("46.55", ""), ("line 26 (Median ITL (ms)) has no value",)),
    (lambda t: t.replace("Successful requests:                     16", "Successful requests:   16.5"),
     ("line 6 (Successful requests) is '16.5', not a whole number",)),
    (lambda t: t.replace("Total generated tokens:                  5600\n", ""), ("has no Total generated tokens",)),
    (lambda t: t.replace("==================================================\n", "", 1),
     ("no closing '=====' line",)),
    (lambda t: t.replace("Benchmark duration (s):                  20.87",
                         "Benchmark duration (s):                  nan"), ("not a finite number",)),
    (lambda t: t.replace("Failed requests:                         0\n",
                         "Failed requests:                         0\nFailed requests:   1\n"), ("a second",)),
])
def test_a_damaged_paste_is_a_one_line_error(registry_url, tmp_path, damage, needles):
    path = _damaged(tmp_path, damage(GEMMA.read_text()))
    assert_one_line_error(run_pdx_here("import", str(path), "--registry", registry_url), "cannot import", *needles)
    assert_nothing_stored(registry_url)


SGLANG = """============ Serving Benchmark Result ============
Backend:                                 sglang
Traffic request rate:                    inf
Successful requests:                     10
Benchmark duration (s):                  1.76
Total input tokens:                      1997
Total generated tokens:                  2798
Total generated tokens (retokenized):    2798
==================================================
"""


def test_sglangs_look_alike_is_not_taken_for_vllms(registry_url, tmp_path):
    """SGLang's bench_serving prints a block under the same header (hand-made here in its layout)."""
    path = _damaged(tmp_path, SGLANG)
    assert_one_line_error(run_pdx_here("import", str(path), "--registry", registry_url), "not a format pdx imports")
    assert_one_line_error(run_pdx_here("import", str(path), "--format", FORMAT, "--registry", registry_url),
                          "SGLang's bench_serving")
    assert_nothing_stored(registry_url)


def test_the_command_and_vllms_own_lines_say_the_load(tmp_path):
    """The block's lines win over vLLM's log lines before it, those over the Namespace line, and that over
    the command line."""
    from pdx.contract.errors import PdxError
    from pdx.registry.importers import read_file

    block = GEMMA.read_text().split("vllm bench serve --model google/gemma-3-27b-it --base-url "
                                    "http://localhost:8000 --dataset-name random --random-input-len 1024 "
                                    "--random-output-len 350 --num-prompts 16\n")[1]
    path = _damaged(tmp_path, "\n".join([
        "$ vllm bench serve \\", "    --model org/m --request-rate 4 \\", "    --burstiness 0.5 --max-concurrency 3 \\",
        "    --input-len 1000 --output-len 300 --metric-percentiles 99",
        "INFO 02-26 11:54:39 [__init__.py:43] Available plugins",
        "Namespace(subparser='bench', model='org/m2', request_rate=2.0, max_concurrency=None, "
        "random_mm_bucket_config={(256, 256, 1): 0.5}, random_input_len=1000, random_output_len=300)",
        "Traffic request rate: 2.0 RPS.", "Burstiness factor: 0.5 (Gamma distribution)",
        "Maximum request concurrency: 4", "100%|██████████| 16/16 [00:20<00:00,  1.30s/it]", block]))
    fmt, (run,) = read_file(path)
    assert fmt == FORMAT
    spec = run["tests"][0]["spec"]
    assert (spec["rate"], spec["burstiness"], spec["max_concurrency"]) == (2.0, 0.5, 4)
    assert (spec["n_prompt"], spec["n_gen"]) == (1000, 300) and run["model"]["name"] == "m2"
    read_from = run["provenance"]["read_from"]
    assert read_from["request_rate"] == read_from["max_concurrency"] == "log lines"
    assert read_from["model_id"] == "Namespace line"
    # An odd command-line value is passed over; the same in vLLM's own lines is an error.
    odd = _damaged(tmp_path, "vllm bench serve --max-concurrency <N> --request-rate fast\n" + block)
    assert read_file(odd)[1][0]["tests"][0]["spec"]["concurrency"] is None
    capped = (DATA / "vllm_bench_serve_printed_pr31826_tp2.txt").read_text()  # its block says 8
    (run,) = read_file(_damaged(tmp_path, "Maximum request concurrency: 4\n" + capped))[1]
    assert run["tests"][0]["spec"]["concurrency"] == 8
    assert run["provenance"]["read_from"]["max_concurrency"] == "result block"
    with pytest.raises(PdxError, match="log lines before line 2 .max_concurrency. is 'lots'"):
        read_file(_damaged(tmp_path, "Maximum request concurrency: lots\n" + block))


# -- properties -----------------------------------------------------------------------------------------------

_LINES = [f"{' Serving Benchmark Result ':=^50}", "=" * 50, "-" * 15 + "Time to First Token" + "-" * 16,
          "Successful requests:  12", "Benchmark duration (s):  1.5", "Total input tokens: 100",
          "Total generated tokens: 7", "Mean TTFT (ms):  x", "P99 ITL (ms): 1e400", "Failed requests: -3",
          "Maximum request concurrency: 0", "Traffic request rate: inf", "vllm bench serve --max-concurrency 9",
          "Namespace(model='a', request_rate=0.0)", "Backend: sglang", "Peak concurrent requests: 3.5"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.text(max_size=60), st.sampled_from(_LINES)), max_size=40))
def test_any_text_is_read_or_refused_with_pdxs_own_error(lines):
    from pdx.contract.errors import PdxError
    from pdx.registry.importers import read_file

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pasted.txt"
        path.write_text("\n".join(lines), errors="surrogatepass")
        try:
            read_file(path, FORMAT)
        except PdxError as exc:
            assert "\n" not in str(exc)


_PERCENTILES = st.lists(st.sampled_from([1.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9]), min_size=1, max_size=4,
                        unique=True)
_MS = st.floats(0, 1e6).map(lambda v: round(v, 2))
_RATE = st.floats(0.01, 1e4).map(lambda v: round(v, 2))


@st.composite
def results(draw):
    """The keys of a vLLM result, every float as vLLM prints it (two decimals)."""
    completed = draw(st.integers(1, 10**6))
    duration = draw(_RATE)
    most = min(10**9, int(duration * 1e8))  # tokens a run of that length can hold (pdx.registry.plausibility)
    document = {"completed": completed, "failed": draw(st.integers(0, 10**4)), "duration": duration,
                "total_input_tokens": draw(st.integers(0, most)), "total_output_tokens": draw(st.integers(0, most)),
                "request_throughput": draw(_RATE), "output_throughput": draw(_RATE),
                "total_token_throughput": draw(_RATE), "max_output_tokens_per_s": draw(_RATE),
                "max_concurrent_requests": draw(st.integers(0, 10**4))}
    if draw(st.booleans()):
        document["max_concurrency"] = draw(st.integers(1, 10**4))
    if draw(st.booleans()):
        document["request_rate"] = draw(_RATE)
    if draw(st.booleans()):
        document["request_goodput"] = draw(_RATE)
    percentiles = draw(_PERCENTILES)
    for metric in draw(st.lists(st.sampled_from(["ttft", "tpot", "itl", "e2el"]), min_size=1, unique=True)):
        document[f"mean_{metric}_ms"], document[f"median_{metric}_ms"] = draw(_MS), draw(_MS)
        for p in percentiles:
            document[f"p{int(p) if p == int(p) else p}_{metric}_ms"] = draw(_MS)
    return document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results(), st.sampled_from(["", "  ", "# "]))
def test_a_printed_result_reads_back_to_its_figures(document, indent):
    """Printed as vLLM prints, (indented or commented out, as logs and scripts keep it) and read back:
    every figure under its JSON key, equal to what was printed."""
    from pdx.registry.importers import read_file

    printed = "\n".join(indent + line for line in _printed(document).splitlines())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pasted.txt"
        path.write_text("Some words before.\n" + printed + "\nand after\n")
        fmt, (run,) = read_file(path)
    assert fmt == FORMAT
    (test,) = run["tests"]
    engine = test["engine"]
    assert {k: v for k, v in engine.items() if k != "reported"} == document
    spec = test["spec"]
    assert spec["n_requests"] == document["completed"] + document["failed"]
    if "request_rate" in document:
        assert spec["rate"] == document["request_rate"] and spec["max_concurrency"] == document.get("max_concurrency")
    else:
        assert spec["concurrency"] == document.get("max_concurrency")
    reported = engine["reported"]["serving"]
    for key, value in document.items():
        if (match := re.fullmatch(r"(mean|median|p[\d.]+)_(ttft|tpot|itl|e2el)_ms", key)):
            assert reported[f"{match[2]}_ms"][match[1]] == value


def test_every_cut_of_a_paste_is_its_run_or_a_one_line_refusal():
    """A paste cut anywhere (a truncated copy) imports as the whole result, when its closing line
    survives, or is refused as truncated, never read as some other result."""
    from pdx.contract.errors import PdxError
    from pdx.registry.importers import read_file

    text = GEMMA.read_text()
    (whole,) = read_file(GEMMA)[1]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cut.txt"
        for end in range(0, len(text), 5):
            path.write_text(text[:end])
            try:
                (run,) = read_file(path, FORMAT)[1]
            except PdxError as exc:
                assert "\n" not in str(exc) and re.search(r"truncated|empty|no '==== Serving", str(exc)), exc
            else:
                assert text[:end].rstrip().endswith("=" * 10)
                assert [{k: v for k, v in t.items() if not k.endswith("_at")} for t in run["tests"]] == \
                    [{k: v for k, v in t.items() if not k.endswith("_at")} for t in whole["tests"]]
