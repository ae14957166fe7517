"""A results hub of 100,000 runs: verify the folder, publish it from bundles, publish again
after one new bundle; print each step's time and the peak memory.

    python tests/benchmarks/hub_100k.py [--runs 100000] [--keep DIR]

The folder is made the way contributors make one, less the registry round trip per run:
1,000 distinct runs from tests/runfactory.py (10 machines x 25 models x 2 backends, 6 tests
a run, 5 samples a test), each copied under new ids with its sample times scaled a little,
then written as one redacted bundle per run named by its content id, exactly as
``pdx submit`` writes them. With --keep DIR the folder is kept and reused (the bundle "again"
adds is taken away after).

Each step runs in a process of its own, as a user's command does: verify, the first build (with a
cache of its own, pdx.reports.hub.bundle_cache, made anew), and the rebuild after one new bundle
("read": the files it read). "MiB" is each step's own peak resident set; "worker MiB" the largest
of the first build's worker processes, which counts the pages a chart renderer forked late shares
with the main process (a file reader alone stays near 100 MiB: 16,000 files read in one process
grew it from 95 to 100 MiB). The issue's target: 100,000 runs in under 5 minutes, linear in runs,
memory bounded.

Measured here (2 cores, quiet; this VM's timings vary by a fifth from run to run and from day to
day: verify's time is a gauge of the machine's speed at the moment):

    commit    runs verify s  build s  ms/run   pages  again s  read  rewritten  verify MiB  build MiB  again MiB
   8f07018  100000     65.9    177.3    1.77  100549     38.4     1         19         155        512        679
   0dd3dd2  100000     59.0    167.7    1.68  100549     37.6     1         19           -       (726 both)
   0dd3dd2   20000      9.7     42.9    2.14   20549      8.9     1         19          80        214        256
   c865678  100000     63.4    203.3    2.03  100549     46.4     1         19           -       (748 both)

The rows with "(... both)" ran every step in one process, as this script did up to 8f07018.
At 100,000 runs "worker MiB" was 405 and the cache 139 MiB (20,000: 185, 28). On
2026-12-01, on a slower day of this VM (verify 101-123 s), on a folder an older version of this
script wrote (before its variants kept llama-bench's avg_ts and the stored rates equal to their
samples' means, which verify then reported, 53,006 problems):

    commit    runs verify s  build s  ms/run   pages  again s  read  rewritten  peak MiB (all steps)
   8d85f70  100000    102.2    311.5    3.11  100549     63.2     1         19       760
   183097d  100000    101.3    273.4    2.73  100549    275.4     -         19       611
   20390a5  100001    112.9    298.0    2.98  100550    275.0     -          0      4658
   3c90748  100000    122.5    456.1    4.56  100549    419.1     -         19      2901

Since 183097d the site keeps of each run a listing, and whole only the few runs per configuration
that hold a page's figure (pdx.reports.site.runs), where it held each run's aggregate record before
(23.5 KB, then 18 KB). Since 8d85f70 a build keeps what each file gave it, and a rebuild after one
new bundle reads that one file. At 0dd3dd2 a worker hashes each file once and sends its runs without
walking them to intern their words (the main process interns a listing's words), and the run page's
cells are written in its table rather than as macros: a file costs a worker about 2.1 ms (render
1.0, checks 0.5, statistics 0.1, staging its pages 0.15), the main process about 0.7 ms.

Memory: the first build's main process grows by about 3.7 KB a run (20,000 to 100,000 runs) and the
rebuild's by about 5.3 KB: what is held per run is its listing (about 1.4 KB: the lists and counts
of every page read it), its staged pages' names and digests until they move into place (0.7 KB),
the site manifest's entries for its two pages (the last build's and this one's: a rebuild holds
both) and the file's name. Bounded per run, and the workers flat; not flat in the main process,
which would need the listings and the manifest kept on disk.
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

from pdx.api.contrib.publish import publish_bundles  # noqa: E402
from pdx.api.contrib.verify import verify_folder  # noqa: E402
from pdx.registry import Registry, bundle  # noqa: E402
from pdx.registry.hub_folder import SUFFIX, file_name  # noqa: E402
from pdx.registry.redact import redact_record  # noqa: E402
from pdx.registry.transfer import write_json  # noqa: E402
from pdx.reports.results import derive_stats  # noqa: E402

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
    # Linux: KiB. RUSAGE_CHILDREN: the largest of the processes this one waited for (its workers).
    return resource.getrusage(who).ru_maxrss / 1024


def _step(send, name: str, bundles: Path, site: Path, cache: Path) -> None:
    """One command, in a process of its own as a user runs it: (seconds, figures, its peak MiB, its
    largest worker's)."""
    started = time.perf_counter()
    if name == "verify":
        verified = verify_folder(bundles)
        figures = {"runs": verified.runs, "problems": len(verified.problems)}
    else:
        result = publish_bundles(bundles, site, title=TITLE, cache=cache)
        figures = {"pages": result.pages, "read": result.files_read, "rewritten": len(result.changed)}
    send.send((time.perf_counter() - started, figures, peak_mib(resource.RUSAGE_SELF),
               peak_mib(resource.RUSAGE_CHILDREN)))


def run_step(name: str, bundles: Path, site: Path, cache: Path) -> tuple:
    context = multiprocessing.get_context("spawn")  # nothing of this process's memory shared or counted
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_step, args=(send, name, bundles, site, cache))
    process.start()
    found = receive.recv()
    process.join()
    return found


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
    cache = root / "site-cache.sqlite"  # what each file gave a build, for the next (pdx.reports.hub.bundle_cache)
    cache.unlink(missing_ok=True)

    verify_s, verified, verify_mib, _ = run_step("verify", bundles, site, cache)
    build_s, built, build_mib, worker_mib = run_step("build", bundles, site, cache)

    # A run no build has seen, whatever folder --keep gave: the one it adds is taken away after.
    first = next(bundles.glob(f"*{SUFFIX}"))
    extra = variant(bundle.read_bundle(bundle.parse_json(bundle.read_text(first), "x"), "x")[0], 0,
                    random.Random(time.time_ns()))
    document = bundle.make_bundle([extra], redact=True)
    added = bundles / file_name(document["runs"][0]["record"])
    write_json(document, str(added))
    try:
        again_s, again, again_mib, _ = run_step("again", bundles, site, cache)
    finally:
        added.unlink()

    runs = verified["runs"]
    print(f"{'runs':>7} {'problems':>8} {'verify s':>8} {'build s':>8} {'ms/run':>7} {'pages':>6} "
          f"{'again s':>8} {'read':>5} {'rewritten':>9} {'verify MiB':>10} {'build MiB':>9} {'again MiB':>9} "
          f"{'worker MiB':>10} {'cache MiB':>9}")
    print(f"{runs:>7} {verified['problems']:>8} {verify_s:>8.1f} {build_s:>8.1f} {build_s / runs * 1000:>7.2f} "
          f"{built['pages']:>6} {again_s:>8.1f} {again['read']:>5} {again['rewritten']:>9} {verify_mib:>10.0f} "
          f"{build_mib:>9.0f} {again_mib:>9.0f} {worker_mib:>10.0f} {cache.stat().st_size / 2**20:>9.0f}", flush=True)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
