"""Make llama-cpp-python's source release small enough to carry to a machine with no network.

    python tests/gpu/trim_llama_source.py SDIST OUT_TARBALL

Keeps what ``pdx llamacpp install --no-bindings`` reads of it (plugins/llamacpp/build.py extracts
only ``*/vendor/llama.cpp/``), and of that only what a CUDA (or HIP, or CPU) build of llama-bench,
llama-server and llama-quantize compiles: no docs, vocab models, tests, examples, benches,
Python converters, web-UI sources, the git metadata, or other backends' kernels (CMake adds a
backend's folder only when its GGML_<NAME> flag is on). Prints the sizes before and after.
"""

from __future__ import annotations

import io
import re
import sys
import tarfile
from pathlib import Path

KEEP_BACKENDS = {"ggml-cpu", "ggml-cuda", "ggml-hip", "ggml-blas"}
# Folders of vendor/llama.cpp no build target reads (with -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF).
DROP_DIRS = ("docs/", "models/", "tests/", "examples/", "benches/", "media/", ".github/", "gguf-py/", "conversion/",
             "ci/", "pocs/", "skills/", "requirements/", "grammars/", "scripts/snapdragon/", ".devops/",
             "tools/ui/src/", "tools/ui/tests/", "tools/server/tests/", "tools/server/webui/", "prompts/")
DROP_FILES = re.compile(r"\.(gguf|png|jpg|jpeg|gif|mp3|wav|ipynb)$|^convert_.*\.py$|^[^/]*\.md$")
_BACKEND = re.compile(r"^ggml/src/(ggml-[a-z0-9-]+)/")


def keep(name: str) -> bool:
    """Whether a member of the source release travels (``name`` as the tarball spells it)."""
    head, sep, inner = name.partition("/vendor/llama.cpp/")
    if not sep or "/" in head:  # only the vendored llama.cpp, not llama-cpp-python's own files or .git
        return False
    if inner.startswith(DROP_DIRS) or DROP_FILES.search(inner):
        return inner.endswith("CMakeLists.txt")  # a folder CMake may still list stays configurable
    backend = _BACKEND.match(inner)
    return not backend or backend.group(1) in KEEP_BACKENDS


def trim(sdist: Path, out: Path) -> tuple[int, int]:
    kept = 0
    with tarfile.open(sdist) as source, tarfile.open(out, "w:gz", compresslevel=9) as dest:
        for member in source:
            if not keep(member.name):
                continue
            data = source.extractfile(member) if member.isfile() else None
            dest.addfile(member, io.BytesIO(data.read()) if data else None)
            kept += 1
    return kept, out.stat().st_size


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    sdist, out = Path(argv[0]), Path(argv[1])
    members, size = trim(sdist, out)
    print(f"trimmed {sdist.name}: {sdist.stat().st_size / 2**20:.1f} MiB -> {size / 2**20:.1f} MiB "
          f"({members} members) at {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
