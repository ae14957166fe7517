"""Build llama.cpp once, for both llama.cpp backends.

``pdx llamacpp install`` compiles the llama.cpp that a llama-cpp-python
source release vendors, as shared libraries plus ``llama-bench`` and
``llama-server``, into the pdx cache (one folder per version and flags), and
installs the matching llama-cpp-python bindings without compiling llama.cpp
a second time: the bindings load this build's ``libllama``. Both backends
therefore measure the same binary, and one compile (about 5 minutes on 2
cores) serves both.

``llama-quantize`` is built with them, so K-quant, IQ and MXFP4 files are
made by llama.cpp's own quantiser; a cached build from before it was added
gets the one tool compiled into it (same source and flags) on the next
``pdx llamacpp install``, without a rebuild of the rest.

x86 builds pass ``-mno-amx-int8``: with llama.cpp's AMX path, quantised
models die with SIGILL on some AMX CPUs (measured on this project's machines).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from pdx.errors import PdxError
from pdx.paths import cache_dir

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
TARGETS = ("llama-bench", "llama-server")  # a build without them is incomplete
TOOLS = ("llama-quantize",)  # built too; added to an older build that lacks them
BUILD_RECORD = "build.json"


@dataclass(frozen=True)
class Build:
    root: Path
    version: str  # llama-cpp-python release whose llama.cpp this is
    commit: str | None
    build_number: int | None
    flags: list[str]
    built_at: str

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    def tool(self, name: str) -> Path:
        return self.bin_dir / name


def builds_root() -> Path:
    return cache_dir("engines")


def cmake_flags() -> list[str]:
    flags = [
        "-DCMAKE_BUILD_TYPE=Release",
        "-DBUILD_SHARED_LIBS=ON",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",  # else the build downloads a web UI
        "-DLLAMA_OPENSSL=OFF",
        "-DGGML_NATIVE=ON",
        "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
        "-DCMAKE_INSTALL_RPATH=" + ("@loader_path" if sys.platform == "darwin" else "$ORIGIN"),
    ]
    if platform.machine().lower() in ("x86_64", "amd64"):
        flags += ["-DCMAKE_C_FLAGS=-mno-amx-int8", "-DCMAKE_CXX_FLAGS=-mno-amx-int8"]
    return flags


def build_dir(version: str, flags: list[str]) -> Path:
    key = hashlib.sha256("\n".join([platform.machine(), *flags]).encode()).hexdigest()[:10]
    return builds_root() / f"llama.cpp-{version}-{key}"


def _read_build(root: Path) -> Build | None:
    try:
        data = json.loads((root / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not all((root / "bin" / t).exists() for t in TARGETS):
        return None
    return Build(root=root, version=data["version"], commit=data.get("commit"),
                 build_number=data.get("build_number"), flags=data.get("flags", []), built_at=data["built_at"])


def find_build(version: str | None = None) -> Build | None:
    """The pdx build to use: this release's with today's flags, else the newest complete one."""
    preferred = _read_build(build_dir(version or LLAMA_CPP_PYTHON_VERSION, cmake_flags()))
    if preferred:
        return preferred
    found = [b for b in (_read_build(p) for p in builds_root().glob("llama.cpp-*")) if b]
    if version:
        found = [b for b in found if b.version == version]
    return max(found, key=lambda b: b.built_at, default=None)


def tool_version(binary: Path) -> tuple[str | None, int | None]:
    """(commit, build number) from ``llama-bench --version``."""
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    match = re.search(r"build (\d+), commit ([0-9a-f]+)", out.stdout + out.stderr)
    return (match[2], int(match[1])) if match else (None, None)


def version_label(binary: Path) -> str | None:
    """What ``--version`` says, as pdx shows it: ``b<build> (<commit>)``; None when it says nothing."""
    commit, number = tool_version(binary)
    return f"b{number} ({commit})" if commit else None


def _run(cmd: list[str], log: Path, env: dict | None = None, cwd: Path | None = None) -> None:
    with log.open("a") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        result = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    if result.returncode != 0:
        raise PdxError(f"`{' '.join(cmd[:3])} ...` failed (exit {result.returncode})", f"see the log {log}")


def _sdist(version: str, log: Path) -> Path:
    src = cache_dir("engines", "src")
    found = sorted(src.glob(f"llama_cpp_python-{version}.tar.gz"))
    if found:
        return found[0]
    _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-python",
          f"llama-cpp-python=={version}", "-d", str(src)], log)
    found = sorted(src.glob(f"llama_cpp_python-{version}.tar.gz"))
    if not found:
        raise PdxError(f"pip did not download llama-cpp-python {version}'s source", f"see the log {log}")
    return found[0]


def _extract(sdist: Path, dest: Path) -> Path:
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if "/vendor/llama.cpp/" in m.name]
        tar.extractall(dest, members=members, filter="data")
    return next(dest.glob("*/vendor/llama.cpp"))


def install(
    version: str = LLAMA_CPP_PYTHON_VERSION,
    jobs: int | None = None,
    bindings: bool = True,
    force: bool = False,
    say: Callable[[str], None] = print,
) -> Build:
    """Build llama.cpp (unless cached) and install the matching Python bindings."""
    for tool in ("cmake",):
        if not shutil.which(tool):
            raise PdxError(f"{tool} is not installed", "install cmake and a C++ compiler, then retry")
    flags = cmake_flags()
    root = build_dir(version, flags)
    build = None if force else _read_build(root)
    log = cache_dir("engines") / f"build-{root.name}.log"
    if build:
        say(f"llama.cpp already built: {root}")
        missing = [t for t in TOOLS if not build.tool(t).exists()]
        if missing:
            add_tools(build, missing, version, jobs, log, say)
    else:
        if root.exists():
            shutil.rmtree(root)
        log.write_text("")
        say(f"building llama.cpp from llama-cpp-python {version} into {root} (log: {log})")
        sdist = _sdist(version, log)
        with tempfile.TemporaryDirectory(prefix="pdx-llamacpp-", dir=builds_root()) as tmp:
            work = _compile(sdist, Path(tmp), flags, [*TARGETS, *TOOLS], jobs, log)
            staging = Path(tmp) / "out"
            shutil.copytree(work / "bin", staging / "bin", symlinks=True)
            commit, number = tool_version(staging / "bin" / "llama-bench")
            record = {"version": version, "commit": commit, "build_number": number, "flags": flags,
                      "built_at": datetime.now(timezone.utc).isoformat()}
            (staging / BUILD_RECORD).write_text(json.dumps(record, indent=2))
            os.replace(staging, root)
        build = _read_build(root)
        if build is None:
            raise PdxError(f"the build in {root} is incomplete", f"see the log {log}")
        say(f"built llama.cpp {build.commit} (build {build.build_number})")
    if bindings:
        install_bindings(version, log, say)
    return build


def _compile(sdist: Path, tmp: Path, flags: list[str], targets: list[str], jobs: int | None, log: Path) -> Path:
    """Configure llama.cpp's source from ``sdist`` under ``tmp`` and build ``targets``; the build folder."""
    source = _extract(sdist, tmp)
    work = tmp / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    _run(["cmake", "-S", str(source), "-B", str(work), *generator, *flags], log)
    _run(["cmake", "--build", str(work), "--target", *targets, "-j", str(jobs or os.cpu_count() or 2)], log)
    return work


def add_tools(build: Build, tools: list[str], version: str, jobs: int | None, log: Path,
              say: Callable[[str], None] = print) -> None:
    """Compile ``tools`` from the build's own source and flags into its bin folder (each one
    atomically), leaving the libraries and binaries already there untouched."""
    say(f"adding {', '.join(tools)} to {build.root} (log: {log})")
    sdist = _sdist(version, log)
    with tempfile.TemporaryDirectory(prefix="pdx-llamacpp-", dir=builds_root()) as tmp:
        work = _compile(sdist, Path(tmp), build.flags or cmake_flags(), tools, jobs, log)
        # Libraries the tools brought (llama-quantize links libllama-quantize-impl.so) first, the tools last,
        # so a tool is never present without what it loads.
        new = [f for f in sorted((work / "bin").iterdir()) if not (build.bin_dir / f.name).exists()
               and f.name not in tools and (f.name.startswith("lib") or f.is_symlink())]
        for item in [*new, *(work / "bin" / tool for tool in tools)]:
            staged = build.bin_dir / f".{item.name}.{os.getpid()}.tmp"
            shutil.copy2(item, staged, follow_symlinks=False)
            os.replace(staged, build.bin_dir / item.name)


QUANT_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M",
               "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4_MOE", "TQ1_0", "TQ2_0", "F16", "BF16", "MXFP4")
# Names pdx takes for llama-quantize's own: its one MXFP4 type puts the experts in MXFP4 and the rest in Q8_0.
QUANT_ALIASES = {"MXFP4": "MXFP4_MOE"}


def quantize(source: Path, dest: Path, qtype: str, threads: int | None = None) -> Path:
    """``llama-quantize SOURCE DEST TYPE`` from pdx's build: the bytes llama.cpp itself writes.
    Types that need an importance matrix (IQ1-IQ3) are refused: a random model has none."""
    qtype = QUANT_ALIASES.get(qtype.upper(), qtype.upper())
    if qtype not in QUANT_TYPES:
        raise PdxError(f"llama-quantize type {qtype!r} is not one pdx makes",
                       f"choose one of: {', '.join(QUANT_TYPES)}")
    build = find_build()
    tool = build.tool("llama-quantize") if build else None
    if tool is None or not tool.exists():
        raise PdxError("pdx's llama.cpp build has no llama-quantize", "run `pdx llamacpp install` (it adds it)")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    cmd = [str(tool), str(source), str(tmp), qtype, *([str(threads)] if threads else [])]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or out.stdout.strip().splitlines() or ["no output"])[-1]
            raise PdxError(f"llama-quantize {qtype} failed (exit {out.returncode}): {last}")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def install_bindings(version: str, log: Path, say: Callable[[str], None] = print) -> None:
    """Install llama-cpp-python without its own llama.cpp: it loads pdx's build."""
    try:
        from importlib.metadata import version as installed_version

        current = installed_version("llama_cpp_python")
    except Exception:
        current = None
    if current == version:
        say(f"llama-cpp-python {version} already installed")
        return
    say(f"installing llama-cpp-python {version} bindings (using the build above)")
    env = dict(os.environ, CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF")
    # --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS, and a library-less
    # wheel must never be reused by a later ordinary install.
    _run([sys.executable, "-m", "pip", "install", "--no-cache-dir", str(_sdist(version, log))], log, env=env)
