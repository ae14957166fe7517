"""Every run says where it ran: the backend of the engine's build, its devices and the offload, read from
llama-bench's own fields (backends, gpu_info, n_gpu_layers) wherever a run keeps them, and shown in the
bench table's backend column, `pdx show` and the run page. The H200 run is llama-bench's JSON recorded on
a real NVIDIA H200 (tests/data/h200; no NVIDIA GPU exists here), imported as a user would."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from pdx.domain import placement

from conftest import pdx_here, pdx_import, run_pdx_here, show

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
    assert placement.devices("llvmpipe (LLVM 15.0.6, 256 bits), llvmpipe (LLVM 15.0.6, 256 bits)") == [
        "llvmpipe (LLVM 15.0.6, 256 bits)"] * 2


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
    # Its llama.cpp came from llama-cpp-python's sdist (a shallow clone: build_number 1): the commit, no "b1".
    assert run["engine"]["version"] is None and run["engine"]["commit"] == "0c1e570"
    assert "b1" not in shown.split()


def test_a_build_number_is_llama_cpps_only_where_it_is_real():
    """One rule for pdx's builds and imported files: 0 and 1 come from a source without its history."""
    from pdx.domain.engine_version import llama_cpp_build, llama_cpp_version

    assert [llama_cpp_build(n) for n in (None, 0, 1, 2, 4589, True, "4589")] == [None, None, None, 2, 4589, None, None]
    assert llama_cpp_version(4589) == "b4589" and llama_cpp_version(1) is None


# --- a pdx run on a replayed H200 -------------------------------------------------------------------------

_LLAMA_BENCH = """import json, sys, time
args = sys.argv[1:]
if "--version" in args:
    print("version: 0.5.0-dev (build 1, commit 0c1e570)\\nbuilt with GNU 12.2.0 for Linux x86_64", file=sys.stderr)
    sys.exit(0)
asked = (int(args[args.index("-p") + 1]), int(args[args.index("-n") + 1]))
reps = int(args[args.index("-r") + 1])
for row in json.load(open(sys.argv[0].replace("llama-bench.py", "recorded.json"))):
    if (row["n_prompt"], row["n_gen"]) == asked:
        row["samples_ns"], row["samples_ts"] = row["samples_ns"][:reps], row["samples_ts"][:reps]
        time.sleep(sum(row["samples_ns"]) / 1e9)  # the repetitions took their time before the line is printed
        print(json.dumps(row))
"""


def _shims(tmp_path: Path) -> tuple[Path, list[str]]:
    """llama-bench and nvidia-smi as the H200 answered (recorded, replayed: no GPU here); nvidia-smi's every
    --query-gpu gets the recorded CSV, which names its columns."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "recorded.json").write_text(H200_JSON.read_text())
    (bin_dir / "llama-bench.py").write_text(_LLAMA_BENCH)
    (bin_dir / "llama-bench").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{bin_dir / "llama-bench.py"}" "$@"\n')
    (bin_dir / "nvidia-smi").write_text(f'#!/bin/sh\ncat "{DATA / "h200" / "nvidia-smi-query.csv"}"\n')
    for shim in ("llama-bench", "nvidia-smi"):
        (bin_dir / shim).chmod(0o755)
    return bin_dir, ["--llama-bench", str(bin_dir / "llama-bench")]


@pytest.fixture
def fresh_offload(monkeypatch):
    """The offload notice unsaid and the GPU looked for anew, before and after (both are once a process)."""
    from pdx.plugins.llamacpp import settings

    monkeypatch.setattr(settings, "_offload_said", False)
    settings.found_gpu.cache_clear()
    yield
    settings.found_gpu.cache_clear()


def test_a_pdx_run_on_the_replayed_h200_offloads_by_default_says_so_once_and_says_where(tmp_path, tiny_gguf,
                                                                                        monkeypatch, fresh_offload):
    """pdx bench through llama-bench on an H200, both replayed from their recorded output (no GPU here):
    one line on stderr says every layer goes to the GPU, llama-bench got -ngl 99, and the table's backend
    column, pdx show and the conditions say CUDA on the H200."""
    bin_dir, bench_args = _shims(tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("COLUMNS", "300")
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    benched = run_pdx_here("bench", "--registry", url, "--backend", "llamacpp-bench", "-m", str(tiny_gguf),
                           "-p", "512", "-n", "128", "-r", "3", "--json", *bench_args)
    assert benched.returncode == 0, (benched.stdout[-3000:], benched.stderr)
    said = "GPU found (NVIDIA H200): offloading every layer (-ngl 99); -ngl 0 for the CPU"
    assert benched.stderr.count(said) == 1, benched.stderr
    (run,) = json.loads(benched.stdout)
    pp, tg = run["tests"]
    assert pp["engine"]["command"][pp["engine"]["command"].index("-ngl") + 1] == "99"
    assert placement.backend_label(run) == "llamacpp-bench (CUDA, NVIDIA H200, ngl 99)"
    assert run["hardware"]["name"] == "NVIDIA H200" and pp["ceilings"]["source"] == "catalog"
    (gpu,) = pp["conditions"]["gpu"]["devices"]
    assert pp["conditions"]["gpu"]["source"] == "nvidia-smi" and gpu["end"]["celsius"] == 35
    shown = pdx_here("show", run["id"], "--registry", url)
    assert "llamacpp-bench (CUDA, NVIDIA H200, ngl 99)" in shown
    assert "GPU 0 NVIDIA H200: SM clock 405 of 1980 MHz" in shown and "temperature 35 °C" in shown
    assert pp["status"] == tg["status"] == "ok"
    assert [s["ns"] for s in tg["samples"]] == [164778412, 161078920, 159578136]  # the recorded first three


def test_asked_for_no_offload_or_on_a_cpu_only_machine_nothing_is_said(monkeypatch, capsys):
    """nvidia-smi absent (this machine) or -ngl given: the default is llama-bench's, silently."""
    from pdx.plugins.llamacpp import settings

    monkeypatch.setattr(settings, "_offload_said", False)
    assert settings.say_offload({}, None) is None
    assert settings.say_offload({"n_gpu_layers": "0"}, "NVIDIA H200") is None
    assert capsys.readouterr().err == ""
    assert settings.say_offload({}, "NVIDIA H200") and settings.say_offload({}, "NVIDIA H200") is None
    assert capsys.readouterr().err.count("GPU found") == 1


# --- the in-process and server backends: llama.cpp's own log ---------------------------------------------------

# llama_print_system_info() of pdx's own CPU build (llama.cpp 0c1e570), read here through ctypes.
CPU_SYSTEM_INFO = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 1 | "
                   "AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | ")
# A CUDA load as llama.cpp logs it (its format strings "%s: using device %s (%s) - %zu MiB free" and
# "%s: offloaded %d/%d layers to GPU", filled in with the recorded H200's name and the 1B model's 16 layers + 1).
CUDA_LOG = ["llama_model_load_from_file_impl: using device CUDA0 (NVIDIA H200) - 142567 MiB free",
            "load_tensors: offloaded 17/17 layers to GPU",
            "system_info: n_threads = 16 (n_threads_batch = 16) / 16 | CUDA : ARCHS = 900 | USE_GRAPHS = 1 | "
            "PEER_MAX_BATCH_SIZE = 128 | CPU : SSE3 = 1 | AVX = 1 | "]


def test_the_cpu_builds_system_info_says_cpu():
    from pdx.plugins.llamacpp import where

    assert where.from_log([], CPU_SYSTEM_INFO) == {"backends": "CPU"}
    # llama-server 0c1e570's log at its default verbosity, as pdx kept it: the load is not in it, nothing is said
    quiet = ["0.00.010.693 I srv    load_model: loading model '/tmp/tiny.gguf'",
             "0.01.811.127 I srv  llama_server: model loaded"]
    assert where.from_log(quiet) == {}
    assert placement.backend_label(_run(where.from_log([], CPU_SYSTEM_INFO))) == "llamacpp-bench (CPU)"


def test_a_cuda_load_says_cuda_the_device_and_the_layers_it_offloaded():
    from pdx.plugins.llamacpp import where

    details = where.from_log(CUDA_LOG)
    assert details == {"backends": "CUDA", "gpu_info": "NVIDIA H200", "offloaded": "17/17"}
    run = _run(details, settings={"n_gpu_layers": 99}) | {"backend": "llamacpp-python"}
    assert placement.backend_label(run) == "llamacpp-python (CUDA, NVIDIA H200, 17/17 layers offloaded)"
    two = where.from_log(["x: using device Vulkan0 (AMD Radeon RX 7900 XTX (RADV NAVI31)) - 24560 MiB free",
                          "x: using device Vulkan1 (AMD Radeon RX 7900 XTX (RADV NAVI31)) - 24560 MiB free"])
    assert two["backends"] == "Vulkan" and placement.devices(two["gpu_info"]) == [
        "AMD Radeon RX 7900 XTX (RADV NAVI31)"] * 2


@pytest.mark.llamacpp
def test_the_real_cpu_llama_bench_says_cpu_and_reads_no_gpu(tiny_gguf, tmp_path, monkeypatch, fresh_offload):
    """pdx's own CPU build of llama-bench on this GPU-less machine: the backend column says CPU, no offload
    is said, and the conditions hold no GPU (None) and name none."""
    monkeypatch.setenv("COLUMNS", "200")
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    benched = run_pdx_here("bench", "--registry", url, "--backend", "llamacpp-bench", "-m", str(tiny_gguf),
                           "-p", "16", "-n", "4", "-r", "2", "--json")
    assert benched.returncode == 0, benched.stderr
    assert "GPU found" not in benched.stderr
    (run,) = json.loads(benched.stdout)
    assert placement.backend_label(run) == "llamacpp-bench (CPU)"
    assert all(t["conditions"]["gpu"] is None for t in run["tests"])
    shown = pdx_here("show", run["id"], "--registry", url)
    assert "llamacpp-bench (CPU)" in shown and "GPU 0" not in shown
