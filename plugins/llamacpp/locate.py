"""Finding the llama.cpp pieces: a llama-bench binary, and the library the
Python bindings load."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pdx.contract.errors import PdxError
from pdx.plugins.llamacpp.build import GPU_ENV, Build, chosen_gpu, find_build

# Each backend's own way in: only the llama-bench backends take --llama-bench.
_BUILD = "run `pdx llamacpp install` (builds llama.cpp, about 5 minutes)"
INSTALL_HINT = f"{_BUILD}, or pass --llama-bench PATH"
SERVER_HINT = f"{_BUILD}, or set PDX_LLAMA_SERVER to a llama-server binary"
BINDINGS_HINT = "run `pdx llamacpp install` (builds llama.cpp and its llama-cpp-python bindings, about 5 minutes)"
_LIB_NAME = "libllama.dylib" if sys.platform == "darwin" else "libllama.so"


def find_tool(name: str, given: list[tuple[str | None, str]], hint: str = INSTALL_HINT) -> Path | None:
    """A llama.cpp program: the first path ``given`` as (value, where it came from), then PATH, then the pdx
    build; with ``PDX_LLAMACPP_GPU`` set, that backend's pdx build before PATH."""
    for value, origin in given:
        if value:
            path = Path(value).expanduser()
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise PdxError(f"{origin} {value}: no executable {name} there", hint)
            return path.absolute()  # "./llama-bench" as a bare "llama-bench" would be looked up on PATH
    on_path = None if chosen_gpu() else shutil.which(name)
    if on_path:
        return Path(on_path)
    return _build_tool(name)


def _build_tool(name: str) -> Path | None:
    """``name`` in the pdx build that runs (see build.find_build); a backend asked for by
    ``PDX_LLAMACPP_GPU`` and not built is an error, not a quiet fall back to another device."""
    build = find_build()
    wanted = chosen_gpu()
    if build is None and wanted:
        raise PdxError(f"{GPU_ENV}={wanted}: no pdx build of llama.cpp for {wanted}",
                       f"run `pdx llamacpp install --gpu {wanted}`, or unset {GPU_ENV}")
    return build.tool(name) if build else None


def find_llama_bench(explicit: str | None = None) -> Path | None:
    """``--llama-bench``, then ``PDX_LLAMA_BENCH``, then PATH, then the pdx build."""
    return find_tool("llama-bench", [(explicit, "--llama-bench"),
                                     (os.environ.get("PDX_LLAMA_BENCH"), "PDX_LLAMA_BENCH")])


def find_llama_server() -> Path | None:
    """``PDX_LLAMA_SERVER``, then PATH, then the pdx build."""
    return find_tool("llama-server", [(os.environ.get("PDX_LLAMA_SERVER"), "PDX_LLAMA_SERVER")], SERVER_HINT)


def bindings_lib_dir() -> tuple[Path | None, Build | None]:
    """Point llama-cpp-python at pdx's build when it has no library of its own.

    Returns the library folder in use (None: the bindings' own) and the pdx
    build it belongs to, if any. Must run before ``import llama_cpp``.
    """
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    if override:
        build = find_build()
        return Path(override), build if build and Path(override) == build.bin_dir else None
    try:
        import importlib.util

        spec = importlib.util.find_spec("llama_cpp")
    except (ImportError, ValueError):
        spec = None
    if spec and spec.origin and (Path(spec.origin).parent / "lib" / _LIB_NAME).exists():
        return None, None
    build = find_build()
    if build is None:
        return None, None
    os.environ["LLAMA_CPP_LIB_PATH"] = str(build.bin_dir)
    return build.bin_dir, build
