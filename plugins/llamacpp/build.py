"""Build llama.cpp once, for both llama.cpp backends, for the machine's accelerator.

``pdx llamacpp install`` compiles the llama.cpp that a llama-cpp-python
source release vendors, as shared libraries plus ``llama-bench`` and
``llama-server``, into the pdx cache (one folder per version, backend and
flags), and installs the matching llama-cpp-python bindings without compiling
llama.cpp a second time: the bindings load this build's ``libllama``. Both
backends therefore measure the same binary, and one compile (about 5 minutes
on 2 quiet cores for the CPU) serves both.

The source is ``<pdx cache>/engines/src/llama_cpp_python-<version>.tar.gz``
when that file is there (an offline GPU machine can be handed one, trimmed to
what the build reads), else pip downloads it there.

``--gpu`` (default ``auto``, see :mod:`pdx.plugins.llamacpp.accelerator`)
chooses the backend: CUDA, HIP, Vulkan, SYCL, Metal or the CPU. Builds for
several backends sit side by side; the CPU build's folder is named as before
backends were added (``llama.cpp-<version>-<key>``), others carry the backend
(``llama.cpp-<version>-cuda-<key>``). Which build runs: ``PDX_LLAMACPP_GPU``
(cuda, hip, vulkan, sycl, metal, cpu) where set, else the build for the
accelerator this machine has, else the newest. GPU builds are trimmed to what
pdx runs: the targets below, CUDA for the GPUs present only, only the f16
flash-attention kernels, no NCCL. llama.cpp compiles through ccache when it is
installed (its ``GGML_CCACHE``, on by default).

``llama-quantize`` is built with them, so K-quant, IQ and MXFP4 files are
made by llama.cpp's own quantiser; a cached build from before it was added
gets the one tool compiled into it (same source and flags) on the next
``pdx llamacpp install``, without a rebuild of the rest.

x86 builds pass ``-mno-amx-int8``: with llama.cpp's AMX path, quantised
models die with SIGILL on some AMX CPUs (measured on this project's machines).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from pdx.domain.engine_version import llama_cpp_build
from pdx.contract.errors import PdxError
from pdx.base.paths import cache_dir
from pdx.plugins.llamacpp.accelerator import BACKENDS, Accelerator, backend_of, detect, present
from pdx.plugins.llamacpp.progress import NinjaProgress

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
TARGETS = ("llama-bench", "llama-server")  # a build without them is incomplete
TOOLS = ("llama-quantize",)  # built too; added to an older build that lacks them
BUILD_RECORD = "build.json"
GPU_ENV = "PDX_LLAMACPP_GPU"  # chooses among cached builds by backend


@dataclass(frozen=True)
class Build:
    root: Path
    version: str  # llama-cpp-python release whose llama.cpp this is
    commit: str | None
    build_number: int | None
    flags: list[str]
    built_at: str
    gpu: str = "cpu"  # the backend it was built for: one of accelerator.BACKENDS

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def label(self) -> str:
        """How pdx names the build: ``llama.cpp 0c1e570 (cuda)``."""
        version = f"b{self.build_number} ({self.commit})" if self.build_number else (self.commit or "unknown commit")
        return f"llama.cpp {version} ({self.gpu})"

    def tool(self, name: str) -> Path:
        return self.bin_dir / name


def builds_root() -> Path:
    return cache_dir("engines")


def cmake_flags(accelerator: Accelerator | None = None) -> list[str]:
    """The CMake options of a build for ``accelerator`` (None: the CPU, as every build before backends)."""
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
    return flags + list(accelerator.flags if accelerator else ())


def build_dir(version: str, flags: list[str], gpu: str = "cpu") -> Path:
    """The build's folder. The key hashes the flags (the backend's among them); the CPU's name stays
    as it was before backends existed, so cached CPU builds (here and in CI caches) stay valid."""
    key = hashlib.sha256("\n".join([platform.machine(), *flags]).encode()).hexdigest()[:10]
    return builds_root() / (f"llama.cpp-{version}-{key}" if gpu == "cpu" else f"llama.cpp-{version}-{gpu}-{key}")


def _read_build(root: Path) -> Build | None:
    try:
        data = json.loads((root / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not all((root / "bin" / t).exists() for t in TARGETS):
        return None
    flags = data.get("flags", [])
    gpu = data.get("gpu") or backend_of(flags)  # builds from before pdx recorded the backend
    # A build number of 0 or 1 is the shallow source's, not llama.cpp's (see tool_version).
    number = data.get("build_number")
    return Build(root=root, version=data["version"], commit=data.get("commit"),
                 build_number=llama_cpp_build(number), flags=flags,
                 built_at=data["built_at"], gpu=gpu if gpu in BACKENDS else "cpu")


def all_builds() -> list[Build]:
    """Every complete build in the cache, newest first."""
    found = [b for b in (_read_build(p) for p in builds_root().glob("llama.cpp-*")) if b]
    return sorted(found, key=lambda b: b.built_at, reverse=True)


def chosen_gpu() -> str | None:
    """The backend ``PDX_LLAMACPP_GPU`` asks for, if set."""
    value = os.environ.get(GPU_ENV, "").strip().lower()
    if value and value not in BACKENDS:
        raise PdxError(f"{GPU_ENV}={value!r} is not a llama.cpp backend", f"set it to one of: {', '.join(BACKENDS)}")
    return value or None


@functools.cache
def machine_backend() -> str:
    """The accelerator this machine has (asked once per process: a machine does not change under pdx)."""
    return present()[0]


def find_build(version: str | None = None, gpu: str | None = None) -> Build | None:
    """The pdx build to use: for ``gpu`` (else ``PDX_LLAMACPP_GPU``, else the accelerator this machine
    has, where builds for several backends are cached), this release's with today's flags first,
    else the newest. With a backend asked for and no build of it, None."""
    found = [b for b in all_builds() if not version or b.version == version]
    wanted = gpu or chosen_gpu()
    if wanted:
        found = [b for b in found if b.gpu == wanted]
    elif len({b.gpu for b in found}) > 1:
        # Only here is the machine asked (nvidia-smi and the like take a while): one backend cached is the one.
        here = machine_backend()
        found = [b for b in found if b.gpu == here] or found
    today = cmake_flags()
    return max(found, key=lambda b: (b.version == (version or LLAMA_CPP_PYTHON_VERSION),
                                     b.flags[:len(today)] == today, b.built_at), default=None)


def built_from(binary: Path) -> str | None:
    """What the pdx build holding ``binary`` was built from: ``llama-cpp-python 0.3.36`` (``pdx llamacpp
    install``) or ``commit <hash>`` (``pdx bisect``); None for a binary pdx did not build. A run keeps
    it, since a release's llama.cpp has no build number (see tool_version) to tell two releases apart."""
    try:
        data = json.loads((Path(binary).parent.parent / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    if not isinstance(version, str) or not version:
        return None
    return f"commit {version}" if data.get("source") else f"llama-cpp-python {version}"


def tool_version(binary: Path) -> tuple[str | None, int | None]:
    """(commit, build number) from ``llama-bench --version``. The build number is llama.cpp's commit
    count; a source without its history (llama-cpp-python's sdist holds a shallow clone: count 1; a
    release tarball: 0) has none, and None is returned rather than a number that reads as the first
    build of llama.cpp."""
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    match = re.search(r"build (\d+), commit ([0-9a-f]+)", out.stdout + out.stderr)
    if not match:
        return None, None
    return match[2], llama_cpp_build(int(match[1]))


def runs(binary: Path) -> bool:
    """Whether ``binary --help`` runs and exits 0: a llama-bench from before ``--version`` (llama-cpp-python
    0.3.35's refuses the flag) is still a working one."""
    try:
        return subprocess.run([str(binary), "--help"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def version_label(binary: Path) -> str | None:
    """What ``--version`` says, as pdx shows it: ``b<build> (<commit>)``, or the commit alone where the
    build number is not real; None when it says nothing."""
    commit, number = tool_version(binary)
    if not commit:
        return None
    return f"b{number} ({commit})" if number else commit


def _run(cmd: list[str], log: Path, env: dict | None = None, cwd: Path | None = None,
         progress: NinjaProgress | None = None) -> None:
    """Run ``cmd`` with its output in ``log`` (line by line, so that it can be followed); each line is
    also fed to ``progress``."""
    with log.open("a", buffering=1) as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        if progress is None:
            result = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=cwd)
            returncode = result.returncode
        else:
            with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                  text=True, errors="replace") as proc:
                assert proc.stdout is not None  # stdout=PIPE
                for line in proc.stdout:
                    fh.write(line)
                    progress.feed(line)
            returncode = proc.returncode
            progress.close()
    if returncode != 0:
        raise PdxError(f"`{' '.join(cmd[:3])} ...` failed (exit {returncode})", f"see the log {log}")


def _sdist(version: str, log: Path) -> Path:
    """llama-cpp-python's source release: the one in the cache's src folder, else pip downloads it there."""
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
    try:
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if "/vendor/llama.cpp/" in m.name]
            tar.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, OSError) as exc:
        why = str(exc).splitlines()[0]
        raise PdxError(f"{sdist} is not a readable source release ({why})",
                       "delete it: pdx downloads the release again with pip") from None
    found = next(dest.glob("*/vendor/llama.cpp"), None)
    if found is None:
        raise PdxError(f"{sdist} holds no vendor/llama.cpp", "delete it: pdx downloads the release again with pip")
    return found


@dataclass(frozen=True)
class Plan:
    """What ``pdx llamacpp install`` builds: for which accelerator, with which flags, where."""

    version: str
    accelerator: Accelerator
    jobs: int

    @property
    def flags(self) -> list[str]:
        return cmake_flags(self.accelerator)

    @property
    def root(self) -> Path:
        return build_dir(self.version, self.flags, self.accelerator.backend)

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, **dict(self.accelerator.env))

    def configure_command(self, source: Path | str, work: Path | str) -> list[str]:
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        return ["cmake", "-S", str(source), "-B", str(work), *generator, *self.flags]

    def build_command(self, work: Path | str, targets: list[str]) -> list[str]:
        return ["cmake", "--build", str(work), "--target", *targets, "-j", str(self.jobs)]

    def describe(self) -> list[str]:
        """``--dry-run``'s lines: the accelerator and why, then the exact commands."""
        acc = self.accelerator
        cached = "cached" if _read_build(self.root) else "not built yet"
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in acc.env)
        return [
            f"accelerator: {acc.backend}",
            *(f"  {line}" for line in acc.evidence),
            f"  ccache: {shutil.which('ccache') or 'not found (llama.cpp uses it when installed)'}",
            f"source: llama.cpp vendored in llama-cpp-python {self.version} "
            f"({cache_dir('engines', 'src') / f'llama_cpp_python-{self.version}.tar.gz'}), extracted to SOURCE",
            f"build folder: {self.root} ({cached})",
            "configure: " + (env + " " if env else "") + shlex.join(self.configure_command("SOURCE", "BUILD")),
            "build: " + shlex.join(self.build_command("BUILD", [*TARGETS, *TOOLS])),
        ]


def plan(version: str = LLAMA_CPP_PYTHON_VERSION, gpu: str = "auto", jobs: int | None = None) -> Plan:
    """The build for ``gpu`` (``auto``: this machine's accelerator); a one-line error where its toolkit
    is missing."""
    return Plan(version, detect(gpu), jobs or os.cpu_count() or 2)


def install(
    version: str = LLAMA_CPP_PYTHON_VERSION,
    jobs: int | None = None,
    bindings: bool = True,
    force: bool = False,
    say: Callable[[str], None] = print,
    gpu: str = "auto",
    progress: NinjaProgress | None = None,
) -> Build:
    """Build llama.cpp for ``gpu`` (unless cached) and install the matching Python bindings.
    ``progress`` shows the compile's steps (default: a line per tenth through ``say``)."""
    chosen = plan(version, gpu, jobs)
    for tool in ("cmake",):
        if not shutil.which(tool):
            raise PdxError(f"{tool} is not installed", "install cmake and a C++ compiler, then retry")
    flags, root = chosen.flags, chosen.root
    build = None if force else _read_build(root)
    log = cache_dir("engines") / f"build-{root.name}.log"
    if build:
        say(f"llama.cpp already built for {build.gpu}: {root}")
        missing = [t for t in TOOLS if not build.tool(t).exists()]
        if missing:
            add_tools(build, missing, version, jobs, log, say, env=chosen.env)
    else:
        if root.exists():
            shutil.rmtree(root)
        log.write_text("")
        say(f"building llama.cpp for {chosen.accelerator.backend} from llama-cpp-python {version} into {root} "
            f"(log: {log})")
        sdist = _sdist(version, log)
        with tempfile.TemporaryDirectory(prefix="pdx-llamacpp-", dir=builds_root()) as tmp:
            work = _compile(sdist, Path(tmp), flags, [*TARGETS, *TOOLS], chosen.jobs, log,
                            env=chosen.env, progress=progress or NinjaProgress(lambda s: say(s.rstrip("\n")), False))
            staging = Path(tmp) / "out"
            shutil.copytree(work / "bin", staging / "bin", symlinks=True)
            commit, _ = tool_version(staging / "bin" / "llama-bench")
            # No build number: the sdist's llama.cpp is a shallow clone, so its count (1) is not llama.cpp's.
            record = {"version": version, "commit": commit, "build_number": None, "flags": flags,
                      "gpu": chosen.accelerator.backend, "built_at": datetime.now(timezone.utc).isoformat()}
            (staging / BUILD_RECORD).write_text(json.dumps(record, indent=2))
            os.replace(staging, root)
        build = _read_build(root)
        if build is None:
            raise PdxError(f"the build in {root} is incomplete", f"see the log {log}")
        say(f"built {build.label}")
    if bindings:
        install_bindings(version, log, say)
    return build


def _compile(sdist: Path, tmp: Path, flags: list[str], targets: list[str], jobs: int | None, log: Path,
             env: dict | None = None, progress: NinjaProgress | None = None) -> Path:
    """Configure llama.cpp's source from ``sdist`` under ``tmp`` and build ``targets``; the build folder."""
    source = _extract(sdist, tmp)
    work = tmp / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    _run(["cmake", "-S", str(source), "-B", str(work), *generator, *flags], log, env=env)
    _run(["cmake", "--build", str(work), "--target", *targets, "-j", str(jobs or os.cpu_count() or 2)], log,
         env=env, progress=progress)
    return work


def add_tools(build: Build, tools: list[str], version: str, jobs: int | None, log: Path,
              say: Callable[[str], None] = print, env: dict | None = None) -> None:
    """Compile ``tools`` from the build's own source and flags into its bin folder (each one
    atomically), leaving the libraries and binaries already there untouched."""
    say(f"adding {', '.join(tools)} to {build.root} (log: {log})")
    sdist = _sdist(version, log)
    with tempfile.TemporaryDirectory(prefix="pdx-llamacpp-", dir=builds_root()) as tmp:
        work = _compile(sdist, Path(tmp), build.flags or cmake_flags(), tools, jobs, log, env=env)
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
