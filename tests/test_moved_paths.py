"""pdx 0.1's plugin guide gave import paths that the folder move (contract, base, domain, measure...)
changed: a plugin written to it still loads (pdx.contract.moved), the same modules under both names."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from pdx.contract.moved import MOVED

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "example-plugin"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_is_the_module_at_its_new_place(old):
    module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__spec__.name == MOVED[old]  # the module keeps its own name: pickling, reloads


def test_every_new_place_exists_and_no_old_path_is_a_file_again():
    root = Path(__file__).resolve().parents[1] / "core"
    for old, new in MOVED.items():
        assert importlib.util.find_spec(new) is not None, new
        assert not (root / Path(*old.split(".")[1:])).with_suffix(".py").exists(), f"{old} is a file again"


def test_the_example_plugin_written_to_the_old_guide_registers_everything(tmp_path):
    """The example plugin with each of its imports put back at the old path (as pdx 0.1's guide wrote
    it) registers its backend, meter, quantizer, importer, charts and pages as it does today."""
    old_of = {new: old for old, new in MOVED.items()}
    copy = tmp_path / "pdx_example"
    copy.mkdir()
    for source in (EXAMPLE / "pdx_example").glob("*.py"):
        text = source.read_text()
        for new in sorted(old_of, key=len, reverse=True):
            text = text.replace(new, old_of[new])
        (copy / source.name).write_text(text)
    assert "pdx.backend" in (copy / "backend.py").read_text() + (copy / "__init__.py").read_text()
    code = (
        "import pdx_example as p\n"
        "from pdx.contract.backend import Backend\n"
        "found = []\n"
        "for name in [n for n in dir(p) if n.startswith('pdx_register_')]:\n"
        "    if name == 'pdx_register_commands':\n"
        "        continue\n"
        "    getattr(p, name)(found.append)\n"
        "kinds = sorted({type(x).__name__ if not isinstance(x, type) else 'Backend' for x in found})\n"
        "assert any(isinstance(x, type) and issubclass(x, Backend) for x in found), found\n"
        "print(*kinds)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert {"Backend", "MeterSource", "Quantizer", "Importer"} <= set(done.stdout.split()), done.stdout
