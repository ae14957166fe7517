"""Every run says where it ran: the backend of the engine's build, its devices and the offload, read from
llama-bench's own fields (backends, gpu_info, n_gpu_layers) wherever a run keeps them, and shown in the
bench table's backend column, `pdx show` and the run page. The H200 run is llama-bench's JSON recorded on
a real NVIDIA H200 (tests/data/h200; no NVIDIA GPU exists here), imported as a user would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdx import placement

from conftest import pdx_here, pdx_import, show

DATA = Path(__file__).parent / "data"
H200_JSON = DATA / "h200" / "llama-bench-cuda-1b-f16.json"


def _run(details: dict | None = None, *tests: dict, settings: dict | None = None) -> dict:
    return {"backend": "llamacpp-bench", "engine": {"details": details or {}, "settings": settings or {}},
            "tests": [{"engine": t} for t in tests]}


@pytest.mark.parametrize(("row", "said"), [
    ({"backends": "CUDA", "gpu_info": "NVIDIA H200", "n_gpu_layers": 99}, "CUDA, NVIDIA H200, ngl 99"),
    ({"backends": "CUDA", "gpu_info": "NVIDIA H100 80GB HBM3, NVIDIA H100 80GB HBM3", "n_gpu_layers": 0},
     "CUDA, 2x NVIDIA H100 80GB HBM3, ngl 0"),
    ({"backends": "CUDA", "gpu_info": "NVIDIA GeForce RTX 3090/NVIDIA GeForce RTX 3090", "n_gpu_layers": 99},
     "CUDA, 2x NVIDIA GeForce RTX 3090, ngl 99"),  # builds before ggml's device registry joined with "/"
    ({"backends": "Metal,BLAS", "gpu_info": "Apple M2 Max", "n_gpu_layers": 99}, "Metal,BLAS, Apple M2 Max, ngl 99"),
    ({"backends": "CPU", "gpu_info": "", "n_gpu_layers": 99}, "CPU"),  # no GPU: its offload means nothing
    ({"gpu_info": "NVIDIA H200"}, ""),  # no backend named: nothing said
])
def test_what_each_llama_bench_record_says_in_a_few_words(row, said):
    assert placement.text(placement.of_run(_run(None, row))) == said
    assert placement.backend_label(_run(None, row)) == (f"llamacpp-bench ({said})" if said else "llamacpp-bench")


def test_the_runs_own_details_come_before_its_tests_and_the_settings_give_the_offload():
    run = _run({"backends": "Vulkan", "gpu_info": "llvmpipe (LLVM 15.0.6, 256 bits)"},
               {"backends": "CPU"}, settings={"n_gpu_layers": 12})
    assert placement.text(placement.of_run(run)) == "Vulkan, llvmpipe (LLVM 15.0.6, 256 bits), ngl 12"


def test_the_recorded_rocm_run_says_rocm():
    """llama-bench's JSONL recorded on a Strix Halo (tests/data/real)."""
    row = json.loads((DATA / "real" / "21_strix_halo_rocm_gptoss20b_depths.jsonl").read_text().splitlines()[0])
    assert placement.text(placement.of_run(_run(None, row))) == "ROCm, Radeon 8060S Graphics, ngl 99"


def test_the_recorded_h200_import_is_cuda_on_the_catalogs_h200_with_its_ceilings(tmp_path, monkeypatch):
    """llama-bench -o json recorded on an NVIDIA H200 (no GPU here): the import's backend column says CUDA on
    the H200, its hardware is the catalog's H200 and both tests are judged against the catalog's 4.8 TB/s
    and 990 TFLOP/s fp16, the model's bytes and parameters read from the file."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    (run_id,) = pdx_import(url, H200_JSON)["added"]
    run = show(url, run_id)
    assert placement.backend_label(run) == "llamacpp-bench (CUDA, NVIDIA H200, ngl 99)"
    assert run["hardware"]["name"] == "NVIDIA H200" and run["hardware"]["catalog"] == "nvidia-h200"
    assert run["model"]["file_bytes"] == 2471763968 and run["model"]["n_params"] == 1235814400
    pp, tg = run["tests"]
    for test in (pp, tg):
        assert test["ceilings"]["source"] == "catalog"
        assert test["ceilings"]["bandwidth"] == 4.8e12 and round(test["ceilings"]["flops"] / 1e12) == 990
    assert pp["ceilings"]["bound"] == "compute" and tg["ceilings"]["bound"] == "memory"
    assert round(tg["ceilings"]["fraction"], 2) == 0.41
    monkeypatch.setenv("COLUMNS", "200")
    shown = pdx_here("show", run_id, "--registry", url)
    assert "llamacpp-bench (CUDA, NVIDIA H200, ngl 99)" in shown and "ran on: CUDA, NVIDIA H200, ngl 99" in shown
    page = tmp_path / "run.html"
    pdx_here("report", run_id, "-o", str(page), "--registry", url)
    assert "llamacpp-bench (CUDA, NVIDIA H200, ngl 99)" in page.read_text()
