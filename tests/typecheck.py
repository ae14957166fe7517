"""Type-check pdx from its source folders: ``python tests/typecheck.py [mypy options]``.

pyproject.toml maps the package ``pdx`` onto core/, registry/, reports/ and plugins/; mypy finds
packages by folder name, so this lays a tree of links named as the package is (pdx -> core's
entries, pdx/registry -> registry/, ...) in .typecheck/ (ignored by git) and runs mypy on it with the
settings of pyproject.toml's [tool.mypy]. Paths in its report are given back as the source's.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = {"registry": "registry", "reports": "reports", "plugins": "plugins"}  # pyproject's package-dir


def link_tree(into: Path) -> Path:
    package = into / "pdx"
    package.mkdir()
    for entry in (ROOT / "core").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in SUBPACKAGES.items():
        (package / name).symlink_to(ROOT / folder)
    return package


def main(argv: list[str]) -> int:
    tree = ROOT / ".typecheck"  # a fixed place, so that mypy's cache stays valid between runs
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir()
    link_tree(tree)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(ROOT / ".mypy_cache"), *argv, "-p", "pdx"],
        cwd=tree, capture_output=True, text=True)
    out = done.stdout + done.stderr
    for folder in SUBPACKAGES:
        out = out.replace(f"pdx/{folder}/", f"{folder}/")
    sys.stdout.write(out.replace("pdx/", "core/"))
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
