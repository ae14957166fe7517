"""A stand-in engine's source in a git repository made for a test (tests/data/standin_engine: a real
C llama-bench, built by CMake, whose work per token each commit sets), and its builds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

STANDIN = Path(__file__).with_name("data") / "standin_engine"
TOOLS = shutil.which("cmake") and shutil.which("cc") and shutil.which("git")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_repo(repo: Path, work: list[int]) -> list[str]:
    """A repository at ``repo``: an initial commit (build number 1, which llama.cpp's rule reads as
    none), then one commit per ``work`` value; their hashes, oldest first."""
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=master")
    git(repo, "config", "user.email", "pdx@example.invalid")
    git(repo, "config", "user.name", "pdx tests")
    (repo / "README.md").write_text("stand-in engine\n")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "initial")
    for name in ("CMakeLists.txt", "llama-bench.c", "llama-server.c"):
        shutil.copy(STANDIN / name, repo / name)
    commits = []
    for value in work:
        (repo / "work.h").write_text(f"#define WORK_PER_TOKEN {value}\n")
        git(repo, "add", ".")
        git(repo, "commit", "--quiet", "-m", f"work per token {value}")
        commits.append(git(repo, "rev-parse", "HEAD"))
    return commits


def install_as_release(repo: Path, commit: str, version: str) -> Path:
    """The stand-in at ``commit`` built where ``pdx llamacpp install --version VERSION`` keeps its CPU
    build (under PDX_CACHE_DIR), with the same flags and build record: pdx finds it as that release's."""
    from pdx.plugins.llamacpp.build import BUILD_RECORD, TARGETS, build_dir, cmake_flags

    flags = cmake_flags()
    root = build_dir(version, flags)
    source, work = root.parent / f"src-{version}", root.parent / f"work-{version}"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(source)], check=True)
    git(source, "checkout", "--quiet", "--detach", commit)
    subprocess.run(["cmake", "-S", str(source), "-B", str(work), *flags], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(work), "--target", *TARGETS, "-j", str(os.cpu_count() or 2)],
                   check=True, capture_output=True)
    shutil.copytree(work / "bin", root / "bin")
    record = {"version": version, "commit": commit[:7], "build_number": None, "flags": flags, "gpu": "cpu",
              "built_at": datetime.now(timezone.utc).isoformat()}
    (root / BUILD_RECORD).write_text(json.dumps(record, indent=2))
    return root
