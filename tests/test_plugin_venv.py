"""A plugin as its author and users meet it: a fresh virtual environment, pdx installed from
this checkout, the example plugin of docs/plugins.rst and two broken ones installed beside it;
then every command of the guide's "Try it" (read from the guide), each one's output checked.

One environment for the session, made once (the pip install is most of this module's time).
Needs a llama-server (the example plugin starts one): tox -e plugins builds it first."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from plugin_guide import EXAMPLE, ROOT, commands

pytestmark = pytest.mark.plugins

BROKEN = [ROOT / "tests" / "data" / "plugins" / name for name in ("pdx-broken-import", "pdx-misspelled-hook")]


@pytest.fixture(scope="session")
def fresh(tmp_path_factory):
    """(the environment's bin folder, a copy of the checkout, the environment variables to run in)."""
    from pdx.plugins.llamacpp.locate import find_llama_server

    server = find_llama_server()
    assert server, "no llama-server: run `pdx llamacpp install` (tox -e plugins does)"
    base = tmp_path_factory.mktemp("fresh")
    checkout = base / "pdx"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(".tox", ".venv", ".git", "__pycache__", "build",
                                                                  "dist", "*.egg-info", ".pytest_cache"))
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=300)
    bin_dir = base / "venv" / "bin"
    packages = [str(checkout), str(checkout / EXAMPLE.relative_to(ROOT))] + [str(p) for p in BROKEN]
    done = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", *packages, "pytest"],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    # The user's environment (pip's configuration, pdx's cache of probes), with this venv first on PATH
    # and nothing of the test's own environment that would leak into it.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PDX_REGISTRY")}
    env |= {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PDX_DATA_DIR": str(base / "data"),
            "PDX_EXAMPLE_SERVER": str(server)}
    return bin_dir, checkout, env


@pytest.fixture(scope="session")
def guide(fresh):
    """Every command of the guide's "Try it", in order, in the fresh environment: command -> result."""
    _, checkout, env = fresh
    results = {}
    for command in commands():
        results[command] = subprocess.run(["bash", "-c", command], cwd=checkout, env=env, capture_output=True,
                                          text=True, timeout=900)
    return results


def _result(guide, start: str) -> subprocess.CompletedProcess:
    return next(r for c, r in guide.items() if c.startswith(start))


def test_every_command_of_the_guide_succeeds(guide):
    failed = {c: (r.stdout[-1500:], r.stderr[-1500:]) for c, r in guide.items() if r.returncode != 0}
    assert not failed, failed


def test_pdx_backends_lists_the_plugin_and_names_the_broken_ones(guide):
    result = _result(guide, "pdx backends")
    assert "example-llama-server available llama.cpp 0.5.0-dev" in " ".join(result.stdout.split())
    assert "llamacpp-bench" in result.stdout and "openai" in result.stdout
    assert "plugin broken-import not loaded: import failed: ModuleNotFoundError: No module named " \
           "'pdx_no_such_engine'" in result.stderr
    assert "plugin misspelled not loaded: invalid: unknown hook 'pdx_register_backend' in plugin" in result.stderr


def test_pdx_plugins_shows_distributions_versions_hooks_and_backends(fresh):
    bin_dir, checkout, env = fresh
    done = subprocess.run([str(bin_dir / "pdx"), "plugins", "--json"], env=env, capture_output=True, text=True,
                          timeout=120)
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert rows["example"] | {"value": None} == {
        "name": "example", "value": None, "distribution": "pdx-example", "version": "0.1.0", "status": "loaded",
        "error": None, "disabled_by": None, "hooks": ["pdx_bench_options", "pdx_register_backends",
                                                      "pdx_register_charts", "pdx_register_commands",
                                                      "pdx_register_engine_builders", "pdx_register_importers",
                                                      "pdx_register_meters",
                                                      "pdx_register_pages", "pdx_register_quantizers",
                                                      "pdx_report_templates"],
        "backends": ["example-llama-server"], "warnings": []}
    assert rows["importers"]["status"] == "loaded" and rows["importers"]["hooks"] == ["pdx_register_importers"]
    assert rows["meters"]["status"] == "loaded" and rows["meters"]["hooks"] == ["pdx_register_meters"]
    assert rows["broken-import"]["status"] == "failed" and rows["broken-import"]["distribution"] == "pdx-broken-import"
    assert rows["misspelled"]["status"] == "failed" and rows["misspelled"]["version"] == "0.0.1"
    assert rows["llamacpp"]["distribution"] == "pdx" and rows["llamacpp"]["status"] == "loaded"


def test_the_contract_suite_passes_for_the_plugin_through_pytest(guide):
    # The plugin's own test module (a BackendContract subclass), and the ready-made suite by name.
    for start in ("python -m pytest -q docs/example-plugin/tests", "python -m pytest -q --pyargs pdx.testing.suite"):
        assert "7 passed" in _result(guide, start).stdout


def test_the_plugins_backend_runs_a_benchmark_beside_the_broken_plugins(guide):
    result = _result(guide, "pdx bench --backend example-llama-server -m")
    assert "pp64" in result.stdout and "tg16" in result.stdout and "complete" in result.stdout
    assert "plugin broken-import not loaded" not in result.stdout


def test_the_plugins_chart_is_on_the_published_site(guide, fresh):
    _, checkout, _ = fresh
    assert _result(guide, "pdx publish site").returncode == 0
    pages = [p.read_text() for p in (checkout / "site" / "hardware").glob("*.html")]
    assert any("Every decode sample" in page and "<svg" in page for page in pages)
    assert all("Rate vs context depth" not in page for page in pages)  # one depth: pdx draws no depth chart
    # The plugin's page (pdx_register_pages), linked from pdx's own pages.
    page = (checkout / "site" / "backends.html").read_text()
    assert "Runs by backend" in page and "<td>example-llama-server</td>" in page
    assert 'backends.html">backends</a>' in (checkout / "site" / "index.html").read_text()


def test_allow_and_block_lists(guide):
    disabled = _result(guide, "PDX_DISABLE_PLUGINS=example pdx backends")
    assert "example-llama-server" not in disabled.stdout and "llamacpp-bench" in disabled.stdout
    only = _result(guide, "PDX_LOAD_PLUGINS=example,openai pdx plugins").stdout
    assert "example        loaded" in only and "openai         loaded" in only
    assert "llamacpp       disabled" in only and "disabled by PDX_LOAD_PLUGINS" in only
