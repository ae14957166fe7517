"""The wheel built from pyproject.toml carries every package and data file."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_contains_every_package_and_template(tmp_path):
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    wheel = next(tmp_path.glob("pdx-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    expected_dirs = {
        "core": "pdx", "plugins": "pdx/plugins", "registry": "pdx/registry", "reports": "pdx/reports",
    }
    for folder, package in expected_dirs.items():
        for source in (ROOT / folder).rglob("*"):
            if source.is_file() and source.suffix in (".py", ".html", ".css", ".js", ".md", ".mako", ".json") \
                    and "__pycache__" not in source.parts:
                target = f"{package}/{source.relative_to(ROOT / folder).as_posix()}"
                assert target in names, f"{target} missing from the wheel"
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "pdx = pdx.cli:main" in text and "llamacpp = pdx.plugins.llamacpp" in text
