#!/usr/bin/env bash
# The CUDA device probes and a vLLM CUDA bench in one call, on a machine with an
# NVIDIA GPU; prints the probed figures beside the catalog's H200 and H100 ones
# and checks them (tests/gpu/check_device_probes.py). Exit 0: all plausible.
#
#   tests/gpu/run_device_probes.sh WHEELS_DIR [OUT_DIR]     # fresh venv from WHEELS_DIR
#   PDX_GPU_VENV=DIR tests/gpu/run_device_probes.sh - [OUT_DIR]   # a venv that already has vLLM and pdx
#
# WHEELS_DIR is what `tests/gpu/run_vllm_cuda.sh --prepare WHEELS_DIR` makes.
# About 3-5 minutes: install, probes (~20 s), vLLM start-up, a 1B-shape bench;
# a hard limit of ten minutes. Leaves the figures and logs in OUT_DIR.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
OUT="$(mkdir -p "${2:-device-probes-out}" && cd "${2:-device-probes-out}" && pwd)"
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: this script needs an NVIDIA GPU" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.csv"

deadline=$((SECONDS + 600))
left() { echo $((deadline - SECONDS)); }
if [[ -n "${PDX_GPU_VENV:-}" ]]; then
    VENV="$PDX_GPU_VENV"
else
    WHEELS="$(cd "${1:?usage: $0 WHEELS_DIR [OUT_DIR]}" && pwd)"
    VENV="$OUT/venv"
    "$PYTHON" -m venv "$VENV"
    export PIP_NO_INDEX=1 PIP_FIND_LINKS="$WHEELS" PIP_DISABLE_PIP_VERSION_CHECK=1
    timeout "$(left)" "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" vllm "$ROOT[test]" 2>&1 | tee "$OUT/install.log"
fi
"$VENV/bin/python" -c "import torch; assert torch.cuda.is_available(), 'torch sees no GPU'; print('torch', torch.__version__, torch.cuda.get_device_name(0))"

export PDX_DATA_DIR="$OUT/data" PDX_CACHE_DIR="$OUT/cache" HF_HUB_OFFLINE=1 VLLM_CACHE_ROOT="$OUT/vllm-cache"
PDX="$VENV/bin/pdx"
cd "$ROOT"
status=0
timeout "$(left)" "$PDX" hw probe --device cuda --force --json > "$OUT/probe-cuda.json" || status=$?
timeout "$(left)" "$PDX" hw probe --device cpu --json > "$OUT/probe-cpu.json" || status=$?
bench=()
if (( $(left) > 120 )); then
    timeout "$(left)" "$PDX" bench --backend vllm -m synth:llama-3.2-1b:f16 -p 512 -n 128 -r 3 \
        -o engine_args='{"enforce_eager": true, "max_model_len": 4096, "gpu_memory_utilization": 0.5}' \
        --registry "sqlite:///$OUT/registry.sqlite" --json > "$OUT/bench-vllm.json" 2> "$OUT/bench-vllm.log" || status=$?
    bench=("$OUT/bench-vllm.json")
else
    echo "no time left for the vLLM bench" >&2; status=1
fi
"$VENV/bin/python" tests/gpu/check_device_probes.py "$OUT/probe-cuda.json" "${bench[@]}" | tee "$OUT/check.txt" || status=$?
echo "device probes + vLLM CUDA bench: exit $status, $SECONDS s; results in $OUT"
exit $status
