"""A results hub of 100,000 runs: verify the folder, publish it from bundles, publish again
after one new bundle; print each step's time and the peak memory.

    python tests/benchmarks/hub_100k.py [--runs 100000] [--keep DIR]

The folder is made the way contributors make one, less the registry round trip per run:
1,000 distinct runs from tests/runfactory.py (10 machines x 25 models x 2 backends, 6 tests
a run, 5 samples a test), each copied under new ids with its sample times scaled a little,
then written as one redacted bundle per run named by its content id, exactly as
``pdx submit`` writes them. With --keep DIR the folder is kept and reused (the bundle "again"
adds is taken away after). Both builds keep a cache of their own (pdx.reports.bundle_cache), made
anew by the first: "read" is the files the rebuild read. "verify MiB" is this process's maximum
resident set after verify, "peak MiB" after both builds; "worker MiB" the largest worker
process's (a file reader alone stays near 120 MiB however many files it reads). The issue's
target: 100,000 runs in under 5 minutes, linear in runs, memory bounded.

Measured here (2 cores, quiet, 2026-12-02; this VM's timings vary by a fifth from run to run), on
a folder written by an older version of this script, before the variants kept llama-bench's
avg_ts and the stored rates equal to their samples' means: verify reports those problems there
(a folder written now has none). The 20,000 runs are every fifth file of the 100,000.

    commit    runs verify s  build s  ms/run   pages  again s  read  rewritten  verify MiB  peak MiB  cache MiB
   8d85f70  100000    102.2    311.5    3.11  100549     63.2     1         19         168       760        139
   183097d  100000    101.3    273.4    2.73  100549    275.4     -         19         168       611          -
   183097d   20000     20.3     56.4    2.82   20549     58.3     -          -          82       261          -
   20390a5  100001    112.9    298.0    2.98  100550    275.0     -          0           -      4658          -
   3c90748  100000    122.5    456.1    4.56  100549    419.1     -         19           -      2901          -

At 183097d the site keeps of each run a listing, and whole only the few runs per configuration
that hold a page's figure (pdx.reports.site_runs): the main process grows by about 4.4 KB a run
(20,000 to 100,000 runs), for the lists every run is on (its listing, the runs page's search index,
the page manifest), where it held each run's aggregate record before (23.5 KB, then 18 KB). Time
is linear in runs (2.7-2.8 ms a run at both sizes), most of it reading each file and rendering its
page in the workers.

At 8d85f70 a build keeps what each file gave it, and the rebuild after one new bundle reads that
one file: 63 s, most of it the aggregate pages, against 275 s. Writing the cache costs the first
build about 120 us a file in the main process (its entry's JSON, compressed, and the row), and the
workers hash each file: 311 s here, over the 5 minutes by 11 s, where the same build without a
cache (`--no-cache`, 183097d's row) took 273 s.
"""

from __future__ import annotations

import argparse
import copy
import multiprocessing
import os
import random
import resource
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import runfactory  # noqa: E402
from runfactory import fill  # noqa: E402

from pdx.contrib.folder import SUFFIX, file_name  # noqa: E402
from pdx.contrib.verify import verify_folder  # noqa: E402
from pdx.registry import Registry, bundle  # noqa: E402
from pdx.stats.results import derive_stats  # noqa: E402
from pdx.reports.bundle_site import publish_bundles  # noqa: E402
from pdx.registry.redact import redact_record  # noqa: E402
from pdx.registry.transfer import write_json  # noqa: E402

DISTINCT = 1_000
TITLE = "pdx hub benchmark"


def variant(record: dict, index: int, rng: random.Random) -> dict:
    record = copy.deepcopy(record)
    record["id"] = uuid.UUID(int=rng.getrandbits(128), version=4).hex
    scale = rng.uniform(0.97, 1.03)
    for test in record["tests"]:
        for sample in test["samples"]:
            sample["ns"] = max(1, int(sample["ns"] * scale))
        # The rates a run stores beside its samples stay their mean, as `pdx hub verify` checks.
        mean = derive_stats(test)["rate"]["mean"]
        engine = test.get("engine") or {}
        if isinstance(engine.get("avg_ts"), (int, float)):
            engine["avg_ts"] = mean
        ceilings = test.get("ceilings") or {}
        if ceilings.get("measured"):
            ceilings["measured"] = mean
            if ceilings.get("ceiling"):
                ceilings["fraction"] = mean / ceilings["ceiling"]
    return record


_BASE: list[dict] = []


def _write_some(job: tuple[Path, int, int]) -> None:
    folder, start, end = job
    rng = random.Random(start)
    for i in range(start, end):
        record = variant(_BASE[i % len(_BASE)], i, rng)
        document = bundle.make_bundle_document([{"sha256": bundle.digest(record), "record": record}], True)
        write_json(document, str(folder / file_name(record)))


def _set_base(base: list[dict]) -> None:
    _BASE[:] = base


def make_folder(folder: Path, n_runs: int) -> None:
    have = len(list(folder.glob(f"*{SUFFIX}")))
    if have >= n_runs:
        return
    started = time.perf_counter()
    # A host name that is no word of a backend's name: redaction replaces it wherever it appears.
    runfactory.ENVIRONMENT = runfactory.ENVIRONMENT | {"hostname": "hub-bench-host"}
    with tempfile.TemporaryDirectory() as scratch:
        registry = Registry(f"sqlite:///{scratch}/r.sqlite")
        # Redacted once: a variant differs in its id and sample times, which redaction leaves alone.
        base = [redact_record(r) for r in registry.records(fill(registry, min(DISTINCT, n_runs)))]
        registry.close()
    step = 2_000
    jobs = [(folder, start, min(start + step, n_runs)) for start in range(have, n_runs, step)]
    with multiprocessing.Pool(os.cpu_count(), initializer=_set_base, initargs=(base,)) as pool:
        pool.map(_write_some, jobs, chunksize=1)
    print(f"wrote {n_runs - have} bundles in {time.perf_counter() - started:.0f} s ({folder})", flush=True)


def peak_mib(who: int) -> float:
    # Linux: KiB. Only this process: a child's counts the parent's pages it had when forked, before exec.
    return resource.getrusage(who).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="folder to keep the bundles (and the site) in")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="pdx-hub-bench-"))
    bundles, site = root / "runs", root / "site"
    bundles.mkdir(parents=True, exist_ok=True)
    make_folder(bundles, args.runs)
    shutil.rmtree(site, ignore_errors=True)
    cache = root / "site-cache.sqlite"  # what each file gave a build, for the next (pdx.reports.bundle_cache)
    cache.unlink(missing_ok=True)

    started = time.perf_counter()
    verified = verify_folder(bundles)
    verify_s = time.perf_counter() - started
    verify_mib = peak_mib(resource.RUSAGE_SELF)
    started = time.perf_counter()
    result = publish_bundles(bundles, site, title=TITLE, cache=cache)
    build_s = time.perf_counter() - started

    # A run no build has seen, whatever folder --keep gave: the one it adds is taken away after.
    first = next(bundles.glob(f"*{SUFFIX}"))
    extra = variant(bundle.read_bundle(bundle.parse_json(bundle.read_text(first), "x"), "x")[0], 0,
                    random.Random(time.time_ns()))
    document = bundle.make_bundle([extra], redact=True)
    added = bundles / file_name(document["runs"][0]["record"])
    write_json(document, str(added))
    started = time.perf_counter()
    again = publish_bundles(bundles, site, title=TITLE, cache=cache)
    again_s = time.perf_counter() - started
    added.unlink()

    print(f"{'runs':>7} {'problems':>8} {'verify s':>8} {'build s':>8} {'ms/run':>7} {'pages':>6} "
          f"{'again s':>8} {'read':>5} {'rewritten':>9} {'verify MiB':>10} {'peak MiB':>8} {'worker MiB':>10} "
          f"{'cache MiB':>9}")
    print(f"{verified.runs:>7} {len(verified.problems):>8} {verify_s:>8.1f} {build_s:>8.1f} "
          f"{build_s / verified.runs * 1000:>7.2f} {result.pages:>6} {again_s:>8.1f} {again.files_read:>5} "
          f"{len(again.changed):>9} {verify_mib:>10.0f} {peak_mib(resource.RUSAGE_SELF):>8.0f} "
          f"{peak_mib(resource.RUSAGE_CHILDREN):>10.0f} {cache.stat().st_size / 2**20:>9.0f}", flush=True)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
