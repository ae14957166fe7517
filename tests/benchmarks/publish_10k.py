"""Publish sites of 1,000 and 10,000 generated runs; print build time and time per run.

    python tests/benchmarks/publish_10k.py [--keep DIR]

One registry of 10,000 runs is generated through pdx.registry's public API
(tests/runfactory.py: 10 machines x 25 models x 2 backends, 6 tests a run, 5
samples a test; about 5 minutes) and kept in DIR (default: a temporary folder),
so a second invocation with --keep skips generating; the 1,000-run site is its
newest 1,000. "cpu s" counts this process and its chart workers. Target: 10,000 runs in under 60 s
here, growing linearly.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runfactory import fill  # noqa: E402

from pdx.registry import Registry  # noqa: E402
from pdx.reports.site.builder import publish  # noqa: E402
from pdx.reports.results import read_runs

SIZES = (1_000, 10_000)


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def registry_with(folder: Path, n_runs: int) -> Registry:
    path = folder / "registry.sqlite"
    registry = Registry(str(path))
    stored = len(read_runs(registry, limit=n_runs))
    if stored < n_runs:
        started = time.perf_counter()
        fill(registry, n_runs - stored, seed=stored)
        print(f"generated {n_runs - stored} runs in {time.perf_counter() - started:.0f} s ({path})", flush=True)
    return registry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="folder to keep the generated registries in")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="pdx-publish-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{'runs':>7} {'load s':>7} {'build s':>8} {'total s':>8} {'ms/run':>7} {'cpu s':>6} {'pages':>6} "
          f"{'charts':>6} {'chart s':>7} {'again s':>8}")
    sizes = [int(x) for x in args.sizes.split(",")]
    registry = registry_with(folder, max(sizes))
    for n in sizes:
        site = folder / f"site-{n}"
        shutil.rmtree(site, ignore_errors=True)
        cpu, started = cpu_seconds(), time.perf_counter()
        runs = read_runs(registry, samples=True, limit=n)
        loaded = time.perf_counter()
        result = publish(runs, site, title=f"{n} generated runs")
        built, cpu = time.perf_counter(), cpu_seconds() - cpu
        again = publish(runs, site, title=f"{n} generated runs")  # re-publishing: nothing changed
        total = built - started
        print(f"{n:>7} {loaded - started:>7.1f} {built - loaded:>8.1f} {total:>8.1f} {total / n * 1000:>7.2f} "
              f"{cpu:>6.0f} {result.pages:>6} {result.charts['rendered']:>6} "
              f"{result.charts['seconds']:>7.1f} {again.seconds:>8.1f}", flush=True)
        assert not again.changed, f"re-publishing unchanged data rewrote {again.changed[:5]}..."
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
