#!/usr/bin/env bash
# The vLLM suite (tests/test_vllm.py and the pdx-vs-`vllm bench serve` benchmark)
# against vLLM's CUDA build, on a machine with an NVIDIA GPU.
#
#   tests/gpu/run_vllm_cuda.sh WHEELS_DIR [OUT_DIR]
#
# Installs nothing but what WHEELS_DIR holds (pip --no-index): vLLM's CUDA
# wheel with its dependencies (torch for CUDA included), pdx's dependencies,
# pytest, setuptools and wheel (to build pdx from this checkout). Prepare it on
# a machine with the package index (same Python version and platform):
#
#   tests/gpu/run_vllm_cuda.sh --prepare WHEELS_DIR
#
# Runs in a fresh virtual environment, within ten minutes (a hard limit: the
# suite is tiny; most of the time is vLLM's start-up), and leaves the log, the
# registry and the GPU's description in OUT_DIR (default ./vllm-cuda-out).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"

if [[ "${1:-}" == "--prepare" ]]; then
    dest="${2:?usage: $0 --prepare WHEELS_DIR}"
    mkdir -p "$dest"
    "$PYTHON" -m pip download -d "$dest" vllm "$ROOT[test]" setuptools wheel
    rm -f "$dest"/pdx-*  # pdx itself is built from the checkout at run time
    exit 0
fi

WHEELS="$(cd "${1:?usage: $0 WHEELS_DIR [OUT_DIR]}" && pwd)"
OUT="$(mkdir -p "${2:-vllm-cuda-out}" && cd "${2:-vllm-cuda-out}" && pwd)"
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: this script needs an NVIDIA GPU" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.csv"

deadline=$((SECONDS + 600))
left() { echo $((deadline - SECONDS)); }
VENV="$OUT/venv"
"$PYTHON" -m venv "$VENV"
export PIP_NO_INDEX=1 PIP_FIND_LINKS="$WHEELS" PIP_DISABLE_PIP_VERSION_CHECK=1
timeout "$(left)" "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" vllm "$ROOT[test]" 2>&1 | tee "$OUT/install.log"
"$VENV/bin/python" -c "import vllm, torch; assert torch.cuda.is_available(), 'torch sees no GPU'; print('vllm', vllm.__version__, 'torch', torch.__version__, torch.cuda.get_device_name(0))" | tee -a "$OUT/install.log"

export PDX_DATA_DIR="$OUT/data" PDX_CACHE_DIR="$OUT/cache" HF_HUB_OFFLINE=1 VLLM_CACHE_ROOT="$OUT/vllm-cache"
# vLLM takes 90% of GPU memory by default; the suite runs two engines at once.
export PDX_VLLM_GPU_MEMORY=0.35
cd "$ROOT"
status=0
timeout "$(left)" "$VENV/bin/python" -m pytest -m vllm tests/test_vllm.py -v --basetemp "$OUT/pytest" \
    2>&1 | tee "$OUT/pytest.log" || status=$?
if (( $(left) > 60 )); then
    timeout "$(left)" "$VENV/bin/python" tests/benchmarks/vllm_vs_bench_serve.py --shape llama-3.2-1b \
        --server-args "--enforce-eager --max-model-len 4096 --gpu-memory-utilization 0.8" --num-prompts 32 --concurrency 8 \
        2>&1 | tee "$OUT/vs-bench-serve.txt" || status=$?
fi
echo "vLLM CUDA suite: exit $status, $SECONDS s; results in $OUT"
exit $status
