"""llama.cpp at a commit of a git checkout (``pdx bisect``), or at a llama-cpp-python release
(``pdx bench --engine-version``), each built once and kept.

A commit is built from a ``git clone --shared --no-checkout`` of the user's checkout into a
temporary folder (the clone borrows the checkout's objects: nothing is copied, and the user's
checkout, its HEAD, index and worktree list are never touched). The clone holds the whole history, so
llama.cpp's own build-info step reads the commit and its build number (the commit count) as it does
in a checkout, and ``llama-bench --version`` reports them: every run stores the commit as its engine
version. Only ``llama-bench`` is built (what a bisect runs), with the flags ``pdx llamacpp install``
uses for this machine's accelerator (``PDX_LLAMACPP_GPU`` chooses another), into
``<builds>/llama.cpp-<commit>-<key>`` (the key hashes the flags, as
:func:`pdx.plugins.llamacpp.build.build_dir` does), where a later bisect finds it. The
default ``<builds>`` is ``<pdx cache>/engines/commits``: outside the folders ``pdx llamacpp info``
lists, so a commit's build is never the one pdx runs by default.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from pdx.contract.engine_build import BuiltEngine
from pdx.contract.errors import PdxError
from pdx.measure.gitrepo import resolve
from pdx.base.paths import cache_dir
from pdx.plugins.llamacpp.accelerator import detect
from pdx.plugins.llamacpp.build import (BUILD_RECORD, _run, chosen_gpu, cmake_flags, find_build, install,
                                        tool_version)

BENCH = "llama-bench"


def commit_folder(builds: Path, commit: str, flags: list[str]) -> Path:
    key = hashlib.sha256("\n".join([platform.machine(), BENCH, *flags]).encode()).hexdigest()[:10]
    return builds / f"llama.cpp-{commit[:12]}-{key}"


def build_commit(source: Path, commit: str, builds: Path | None = None,
                 say: Callable[[str], None] = print, gpu: str | None = None, jobs: int | None = None) -> BuiltEngine:
    """llama-bench built from ``commit`` of the git checkout ``source`` (cached by commit and flags), for
    ``gpu`` (default: ``PDX_LLAMACPP_GPU`` where set, else this machine's accelerator)."""
    source = Path(source).expanduser().absolute()
    full = resolve(source, commit, "commit")
    accelerator = detect(gpu or chosen_gpu() or "auto")
    flags = cmake_flags(accelerator)
    builds = Path(builds) if builds else cache_dir("engines", "commits")
    builds.mkdir(parents=True, exist_ok=True)
    root = commit_folder(builds, full, flags)
    bench = root / "bin" / BENCH
    if bench.is_file() and (root / BUILD_RECORD).is_file():
        return BuiltEngine({"llama_bench": str(bench)}, f"llama.cpp {full[:12]} ({accelerator.backend})", True)
    if not shutil.which("cmake"):
        raise PdxError("cmake is not installed", "install cmake and a C++ compiler, then retry")
    log = builds / f"build-{root.name}.log"
    log.write_text("")
    say(f"building llama.cpp {full[:12]} for {accelerator.backend} into {root} (log: {log})")
    env = dict(os.environ, **dict(accelerator.env))
    with tempfile.TemporaryDirectory(prefix="pdx-commit-", dir=builds) as tmp:
        src, work = Path(tmp) / "src", Path(tmp) / "build"
        _run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(source), str(src)], log)
        _run(["git", "-C", str(src), "checkout", "--quiet", "--detach", full], log)
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        try:
            _run(["cmake", "-S", str(src), "-B", str(work), *generator, *flags], log, env=env)
            _run(["cmake", "--build", str(work), "--target", BENCH, "-j", str(jobs or os.cpu_count() or 2)], log,
                 env=env)
        except PdxError:
            raise PdxError(f"llama.cpp {full[:12]} did not build", f"see the log {log}") from None
        built = next((p for p in (work / "bin" / BENCH, work / BENCH) if p.is_file()), None)
        if built is None:
            raise PdxError(f"llama.cpp {full[:12]} built no {BENCH}", f"see the log {log}")
        staging = Path(tmp) / "out"
        # llama-bench and the shared libraries beside it (a build with BUILD_SHARED_LIBS loads them by $ORIGIN).
        shutil.copytree(built.parent, staging / "bin", symlinks=True,
                        ignore=lambda folder, names: [n for n in names if n != BENCH and ".so" not in n
                                                      and not n.endswith(".dylib")])
        reported, number = tool_version(staging / "bin" / BENCH)
        record = {"version": full, "commit": reported, "build_number": number, "flags": flags,
                  "gpu": accelerator.backend, "source": str(source),
                  "built_at": datetime.now(timezone.utc).isoformat()}
        (staging / BUILD_RECORD).write_text(json.dumps(record, indent=2))
        if root.exists():
            shutil.rmtree(root)  # a half-made folder from an interrupted build
        os.replace(staging, root)
    return BuiltEngine({"llama_bench": str(root / "bin" / BENCH)}, f"llama.cpp {full[:12]} ({accelerator.backend})",
                       False)


def build_release(version: str, say: Callable[[str], None] = print) -> BuiltEngine:
    """The llama.cpp of llama-cpp-python ``version``: the cached build for this machine, else built now
    (``pdx llamacpp install --version V --no-bindings``: many minutes)."""
    if not re.fullmatch(r"[0-9][0-9A-Za-z.+-]{0,39}", version):
        raise PdxError(f"--engine-version {version!r} is not a llama-cpp-python release", "give one like 0.3.36")
    build = find_build(version)
    if build is not None and build.version == version:
        return BuiltEngine({"llama_bench": str(build.tool(BENCH))}, build.label, True)
    say(f"llama-cpp-python {version}: no cached build; building it now (`pdx llamacpp install --version {version}`)")
    build = install(version, bindings=False, say=say)
    return BuiltEngine({"llama_bench": str(build.tool(BENCH))}, build.label, False)
