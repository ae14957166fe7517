#!/usr/bin/env bash
# Energy per token on an NVIDIA GPU, in one call: records NVML's energy counter at idle (the replay
# tests/test_energy_zeus.py should use instead of its hand-made one), then runs llama.cpp (CUDA)
# and vLLM on one synthetic model with energy on and prints J/token for prefill and decode and the
# idle watts of each run.
#
#   tests/gpu/run_energy.sh WHEELS_DIR [OUT_DIR]
#   PDX_GPU_VENV=DIR PDX_LLAMA_BENCH=PATH tests/gpu/run_energy.sh - [OUT_DIR]   # already installed and built
#
# WHEELS_DIR is what `tests/gpu/run_vllm_cuda.sh --prepare WHEELS_DIR` makes, plus `pip download
# zeus llama-cpp-python --no-binary llama-cpp-python` (Zeus for the meters, llama.cpp's source for
# a CUDA llama-bench built here for this GPU's architecture only, about 3 minutes on 16 cores).
# A hard limit of ten minutes; leaves the trace, the runs and the logs in OUT_DIR.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
OUT="$(mkdir -p "${2:-energy-out}" && cd "${2:-energy-out}" && pwd)"
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: this script needs an NVIDIA GPU" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv | tee "$OUT/gpu.csv"

deadline=$((SECONDS + 600))
left() { echo $((deadline - SECONDS)); }
if [[ -n "${PDX_GPU_VENV:-}" ]]; then
    VENV="$PDX_GPU_VENV"
else
    WHEELS="$(cd "${1:?usage: $0 WHEELS_DIR [OUT_DIR]}" && pwd)"
    VENV="$OUT/venv"
    "$PYTHON" -m venv "$VENV"
    timeout "$(left)" "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" vllm "$ROOT[test,energy]" \
        2>&1 | tee "$OUT/install.log"
fi
PY="$VENV/bin/python"
PDX="$VENV/bin/pdx"
export PDX_DATA_DIR="$OUT/data" PDX_CACHE_DIR="$OUT/cache" HF_HUB_OFFLINE=1 VLLM_CACHE_ROOT="$OUT/vllm-cache"
cd "$ROOT"

# 1. NVML's counter at idle, read every 20 ms for 3 s: the replay to record.
"$PY" - "$OUT/nvml-trace.json" <<'PYEOF'
import json, sys, time
import pynvml
pynvml.nvmlInit()
handle = pynvml.nvmlDeviceGetHandleByIndex(0)
name = pynvml.nvmlDeviceGetName(handle)
readings = []
end = time.monotonic() + 3
while time.monotonic() < end:
    readings.append([time.monotonic_ns(), pynvml.nvmlDeviceGetTotalEnergyConsumption(handle),
                     pynvml.nvmlDeviceGetPowerUsage(handle)])
    time.sleep(0.02)
steps = [b[0] - a[0] for a, b in zip(readings, readings[1:]) if b[1] != a[1]]
json.dump({"gpu": name, "architecture": pynvml.nvmlDeviceGetArchitecture(handle),
           "columns": ["monotonic_ns", "total_energy_mj", "power_mw"], "readings": readings}, open(sys.argv[1], "w"))
print(f"nvml: {name}, {len(readings)} readings, counter steps every ~{sorted(steps)[len(steps) // 2] / 1e6:.0f} ms"
      if steps else f"nvml: {name}, counter did not move in 3 s")
PYEOF
"$PDX" hw --no-probe | tee "$OUT/hw.txt"

status=0
MODEL=synth:llama-3.2-1b:f16
# 2. llama.cpp with CUDA: a llama-bench built for this GPU alone, unless one is given.
if [[ -z "${PDX_LLAMA_BENCH:-}" && -n "${WHEELS:-}" ]] && (( $(left) > 300 )); then
    sdist="$(ls "$WHEELS"/llama_cpp_python-*.tar.gz | head -1)"
    mkdir -p "$OUT/llama-src" && tar -xzf "$sdist" -C "$OUT/llama-src" --strip-components=1
    arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)"
    timeout "$(left)" cmake -S "$OUT/llama-src/vendor/llama.cpp" -B "$OUT/llama-build" -DGGML_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$arch" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
        > "$OUT/llama-build.log" 2>&1 \
      && timeout "$(left)" cmake --build "$OUT/llama-build" --target llama-bench -j "$(nproc)" >> "$OUT/llama-build.log" 2>&1 \
      && export PDX_LLAMA_BENCH="$OUT/llama-build/bin/llama-bench" || { echo "llama.cpp CUDA build failed" >&2; status=1; }
fi
runs=()
if [[ -n "${PDX_LLAMA_BENCH:-}" ]] && (( $(left) > 150 )); then
    timeout "$(left)" "$PDX" bench --backend llamacpp-bench -m "$MODEL" -p 512 -n 128 -r 5 -ngl 99 \
        --registry "sqlite:///$OUT/registry.sqlite" --json > "$OUT/bench-llamacpp.json" 2> "$OUT/bench-llamacpp.log" \
      && runs+=("$OUT/bench-llamacpp.json") || status=$?
fi
# 3. vLLM on the same model.
if (( $(left) > 120 )); then
    timeout "$(left)" "$PDX" bench --backend vllm -m "$MODEL" -p 512 -n 128 -r 5 \
        -o engine_args='{"enforce_eager": true, "max_model_len": 4096, "gpu_memory_utilization": 0.5}' \
        --registry "sqlite:///$OUT/registry.sqlite" --json > "$OUT/bench-vllm.json" 2> "$OUT/bench-vllm.log" \
      && runs+=("$OUT/bench-vllm.json") || status=$?
else
    echo "no time left for the vLLM bench" >&2; status=1
fi
# 4. The figures: J/token per phase and idle watts, per run.
"$PY" - "${runs[@]}" <<'PYEOF' | tee "$OUT/energy.txt" || status=$?
import json, sys
missing = 0
for path in sys.argv[1:]:
    for run in json.load(open(path)):
        for test in run["tests"]:
            e = (test.get("stats") or {}).get("energy")
            if not e:
                print(f"{run['backend']} {test['name']}: no energy ({test['status']})"); missing += 1; continue
            print(f"{run['backend']:>15} {test['name']:>6} {e['phase']:>8}: {e['j_per_token']:.4g} J/token "
                  f"({e['net_j_per_token']:.4g} net), {e['watts']:.0f} W, idle {e['idle_watts']:.0f} W, "
                  f"{e['tokens_per_joule']:.3g} tokens/J, {test['stats']['rate']['mean']:.1f} t/s")
sys.exit(1 if missing or not sys.argv[1:] else 0)
PYEOF
echo "energy: exit $status, $SECONDS s; results in $OUT"
exit $status
