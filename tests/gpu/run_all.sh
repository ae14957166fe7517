#!/usr/bin/env bash
# The one GPU check: on a bare NVIDIA machine with no network, in at most 9 minutes, from what
# tests/gpu/prepare.sh staged (pdx's wheel, the wheels the machine lacks, llama.cpp's trimmed
# source: 15-20 MiB). Run tests/gpu/prepare.sh here first; then, with the device tool, from the
# repository root:
#
#   run(command="bash tests/gpu/run_all.sh .gpu-check", carry=[".gpu-check"], timeout_s=600)
#
# In order, each step only while time is left (the earlier ones matter more):
#   1. installs the wheels into a folder of its own (pip --no-index --no-deps --target), puts the
#      trimmed source where `pdx llamacpp install` reads it offline, records nvidia-smi;
#   2. builds llama.cpp for the GPU: `pdx llamacpp install --gpu auto --no-bindings` (a 1B f16
#      model is written meanwhile: `pdx model synth --shape llama-3.2-1b`);
#   3. the CUDA probes (`pdx hw probe --device cuda`) and their check (check_device_probes.py);
#   4. `pdx bench -p 512 -n 128 -ngl 99` (energy on) beside llama-bench on the same work and binary;
#   5. a depth sweep (-d 0,4096,16384): the ceilings and the fixed cost per token;
#   6. `pdx serve-bench --scenario sweep -c 2,8,16 --clients 2` against llama-server on the GPU;
#   7. prints every run (`pdx show`: the GPU conditions with them) and packs into $OUT (at most 8
#      files): summary.txt (all that was printed), runs.pdx.json (`pdx export` of every run),
#      probe-cuda.json, llama-bench.json, logs.tar.gz (build and step logs, nvidia-smi -q).
# Exit 0 only if every step ran and passed.
#
# A dry run of the logic on a machine with no GPU (a CPU build, a tiny model, small tests, no
# probes), with the pdx and llama.cpp build already there:
#   PDX_GPU_CHECK_DRY=1 OUT=/tmp/gpu-check-out bash tests/gpu/run_all.sh .gpu-check
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
STAGE="$(cd "${1:-$ROOT/.gpu-check}" && pwd)" || { echo "no staged folder: run tests/gpu/prepare.sh first" >&2; exit 2; }
OUT="${OUT:-$ROOT/gpu-check-out}"
mkdir -p "$OUT"
W="$(mktemp -d /tmp/pdx-gpu-check.XXXXXX)"
DRY="${PDX_GPU_CHECK_DRY:-}"
deadline=$((SECONDS + ${PDX_GPU_CHECK_SECONDS:-540}))
left() { echo $((deadline - SECONDS)); }
failed=()
say() { echo "$*" | tee -a "$W/summary.txt"; }
# step NAME SECONDS_NEEDED COMMAND...: runs COMMAND within the time left, its output into the summary.
step() {
    local name="$1" need="$2"; shift 2
    if (( $(left) < need )); then
        say "== $name: not run, $(left) s left of the budget (needs ~$need s)"; failed+=("$name: no time"); return 1
    fi
    say "== $name"
    local start=$SECONDS
    timeout "$(left)" "$@" 2>>"$W/$name.log" | tee "$W/$name.out" | tee -a "$W/summary.txt"
    local rc=${PIPESTATUS[0]}
    say "   ($name: exit $rc, $((SECONDS - start)) s)"
    (( rc == 0 )) || { failed+=("$name: exit $rc (log $name.log)"); tail -5 "$W/$name.log" | tee -a "$W/summary.txt"; }
    return "$rc"
}
export COLUMNS=120 PYTHONUNBUFFERED=1
R="sqlite:///$W/registry.sqlite"

# 1. What pdx runs on, offline.
if [[ -z "$DRY" ]]; then
    command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: this check needs an NVIDIA GPU" >&2; exit 2; }
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$W/site" \
        "$STAGE"/whl/*.whl > "$W/install.log" 2>&1 || { cat "$W/install.log"; exit 2; }
    export PYTHONPATH="$W/site${PYTHONPATH:+:$PYTHONPATH}" PATH="$W/site/bin:$PATH"
    export PDX_CACHE_DIR="$W/cache" HF_HUB_OFFLINE=1
    mkdir -p "$PDX_CACHE_DIR/engines/src" && cp "$STAGE"/src/llama_cpp_python-*.tar.gz "$PDX_CACHE_DIR/engines/src/"
    nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit,compute_cap,clocks.max.sm --format=csv \
        | tee -a "$W/summary.txt"
    nvidia-smi -q > "$W/nvidia-smi-q.txt" 2>&1
    GPU=auto SHAPE=llama-3.2-1b P=512 N=128 DEPTHS=0,4096,16384 REPS=5 CONCURRENCY=2,8,16
    SERVER_ARGS="-ngl 99 -np 16 -c 65536"
else
    GPU=cpu SHAPE=tiny P=64 N=16 DEPTHS=0,256 REPS=2 CONCURRENCY=2,4
    SERVER_ARGS="-ngl 99 -np 4 -c 4096"
fi
export PDX_DATA_DIR="$W/data"
say "$(pdx --version 2>&1 | tail -1), python $(python3 -c 'import sys; print(sys.version.split()[0])'), $(nproc) CPUs"
MODEL="$W/model-$SHAPE-f16.gguf"

# 2. llama.cpp for the accelerator, the model written meanwhile.
pdx model synth --shape "$SHAPE" --type f16 -o "$MODEL" > "$W/synth.log" 2>&1 &
synth=$!
# Read whole, not piped into grep -q: with pipefail a grep that stops early fails the test.
install_help="$(pdx llamacpp install --help 2>&1)" builds="$(pdx llamacpp info 2>&1)"
if [[ "$install_help" == *"--gpu"* ]]; then
    step build 240 pdx llamacpp install --gpu "$GPU" --no-bindings
elif [[ -n "$DRY" && "$builds" == *"pdx build: none"* ]]; then
    say "== build: dry run, and no llama.cpp build here: not building one (half an hour on a small CPU)"
elif [[ -n "$DRY" ]]; then  # a pdx from before --gpu: its cached CPU build, for the logic alone
    step build 10 pdx llamacpp install --no-bindings
else
    say "== build: this pdx's \`llamacpp install\` has no --gpu: it would build for the CPU alone"
    failed+=("build: no --gpu")
fi
wait "$synth" || { failed+=("model: pdx model synth failed"); cat "$W/synth.log"; }
pdx llamacpp info 2>&1 | tee -a "$W/summary.txt"
BENCH_BIN="$(tail -1 "$W/build.out" 2>/dev/null)/llama-bench"  # install prints the build's bin folder last

# 3. The probes, checked against the catalog and what a correct call reaches.
if [[ -z "$DRY" ]]; then
    if (( $(left) > 60 )); then
        say "== probe: pdx hw probe --device cuda --force"
        timeout "$(left)" pdx hw probe --device cuda --force --json > "$W/probe-cuda.json" 2> "$W/probe.log" \
            || failed+=("probe: exit $?")
        pdx hw probe --device cuda 2>&1 | tee -a "$W/summary.txt"  # the cached figures, as pdx shows them
    else
        failed+=("probe: no time")
    fi
    step probe-check 5 python3 "$ROOT/tests/gpu/check_device_probes.py" "$W/probe-cuda.json"
fi

# 4. pdx beside llama-bench: the same work on the same binary.
run_ids=()
run_bench() {  # NAME SECONDS ARGS...: one pdx bench; its JSON kept, the run shown
    local name="$1" need="$2"; shift 2
    if (( $(left) < need )); then say "== $name: not run, $(left) s left"; failed+=("$name: no time"); return 1; fi
    say "== $name: pdx bench $*"
    local start=$SECONDS
    timeout "$(left)" pdx bench --backend llamacpp-bench -m "$MODEL" -ngl 99 --registry "$R" --json "$@" \
        > "$W/$name.json" 2> "$W/$name.log"
    local rc=$?
    say "   ($name: exit $rc, wall $((SECONDS - start)) s)"
    local id
    id="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["id"])' "$W/$name.json" 2>/dev/null)"
    [[ -n "$id" ]] && { run_ids+=("$id"); pdx show "$id" --registry "$R" 2>&1 | tee -a "$W/summary.txt"; }
    (( rc == 0 )) || { failed+=("$name: exit $rc"); tail -5 "$W/$name.log" | tee -a "$W/summary.txt"; }
}
run_bench bench 60 -p "$P" -n "$N" -r "$REPS"
if [[ -n "$BENCH_BIN" && -x "$BENCH_BIN" ]] && (( $(left) > 30 )); then
    say "== llama-bench: $BENCH_BIN -p $P -n $N -r $REPS -ngl 99"
    start=$SECONDS
    timeout "$(left)" "$BENCH_BIN" -m "$MODEL" -p "$P" -n "$N" -r "$REPS" -ngl 99 -o json \
        > "$W/llama-bench.json" 2> "$W/llama-bench.log" || failed+=("llama-bench: failed")
    say "   (llama-bench: wall $((SECONDS - start)) s)"
    python3 - "$W/bench.json" "$W/llama-bench.json" <<'PYEOF' | tee -a "$W/summary.txt" || failed+=("pdx vs llama-bench")
import json, sys
pdx = {t["name"]: t["stats"]["rate"]["mean"] for t in json.load(open(sys.argv[1]))[0]["tests"] if t.get("stats")}
ok = True
for row in json.load(open(sys.argv[2])):
    name = f"pp{row['n_prompt']}" if row["n_prompt"] else f"tg{row['n_gen']}"
    mine = pdx.get(name)
    gap = f"{mine / row['avg_ts'] - 1:+.1%}" if mine else "missing in pdx's run"
    print(f"{name:>8}: pdx {mine or 0:12,.1f} t/s  llama-bench {row['avg_ts']:12,.1f} t/s  ({gap}); "
          f"llama-bench backends {row.get('backends')}, gpu {row.get('gpu_info')}")
    ok &= bool(mine) and abs(mine / row["avg_ts"] - 1) < 0.10
sys.exit(0 if ok else 1)
PYEOF
else
    say "== llama-bench: not run (binary '${BENCH_BIN}' not found, or $(left) s left)"; failed+=("llama-bench: not run")
fi

# 5. The depth sweep: ceilings at depth, and the fixed cost per token they leave.
run_bench depth 60 -p "$P" -n "$N" -d "$DEPTHS" -r 3
if ! grep -q "^fixed cost per" "$W/summary.txt"; then
    if [[ -z "$DRY" ]]; then failed+=("depth: no fixed cost per token shown"); else say "(dry run: no fixed cost found)"; fi
fi

# 6. llama-server under load, two client processes.
if (( $(left) > 60 )); then
    say "== serve: pdx serve-bench --scenario sweep -c $CONCURRENCY --clients 2"
    timeout "$(left)" pdx serve-bench --backend llamacpp-server -m "$MODEL" --scenario sweep -c "$CONCURRENCY" \
        -p "$P" -n "$N" --clients 2 --server-args "$SERVER_ARGS" --registry "$R" --json \
        > "$W/serve.json" 2> "$W/serve.log" || failed+=("serve: exit $?")
    id="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["id"])' "$W/serve.json" 2>/dev/null)"
    [[ -n "$id" ]] && pdx show "$id" --registry "$R" 2>&1 | tee -a "$W/summary.txt"
else
    say "== serve: not run, $(left) s left"; failed+=("serve: no time")
fi

# 7. Pack what was stored.
pdx export --registry "$R" -o "$OUT/runs.pdx.json" > /dev/null 2>>"$W/export.log" || failed+=("export")
for f in probe-cuda.json llama-bench.json; do [[ -s "$W/$f" ]] && cp "$W/$f" "$OUT/"; done
say "== $SECONDS s in all; $(( ${#failed[@]} )) problem(s)"
for problem in "${failed[@]}"; do say "FAIL $problem"; done
cp "$W/summary.txt" "$OUT/summary.txt"
(cd "$W" && tar -czf "$OUT/logs.tar.gz" --exclude='site' --exclude='cache' --exclude='data' --exclude='*.gguf' \
    --exclude='registry.sqlite' ./*.log ./*.out ./*.json ./*.txt 2>/dev/null)
ls -la "$OUT"
(( ${#failed[@]} == 0 ))
