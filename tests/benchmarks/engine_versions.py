"""Two llama-cpp-python releases' llama.cpp, built for real and run by ``pdx bench --engine-version``:
prints each version's build, whether it was cached or built now, and each test's rate per version
with its 95% CI. Too slow for the suite (each release's build takes many minutes on 2 cores; a
cached one is reused); the suite runs the same path on a stand-in engine (tests/test_engine_versions.py).

    python tests/benchmarks/engine_versions.py [--versions 0.3.35,0.3.36] [--model PATH] [-r 5]

The runs go to a temporary registry; the builds stay in pdx's cache (``pdx llamacpp info`` lists them).
"""

from __future__ import annotations

import argparse
import tempfile

from pdx import api
from pdx.domain.workload import build_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="0.3.35,0.3.36", help="llama-cpp-python releases, comma-separated")
    parser.add_argument("--model", default=None)
    parser.add_argument("-r", "--repetitions", type=int, default=5)
    args = parser.parse_args()
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    workload = build_workload(n_prompt="512", n_gen="128", repetitions=args.repetitions)
    base = api.BenchConfig(backend="llamacpp-bench", model=args.model, workload=workload, energy=False)
    configs = api.engine_versions(base, versions, say=print)
    with tempfile.TemporaryDirectory() as tmp:
        runs = api.run_interleaved(configs, api.open_registry(f"{tmp}/registry.sqlite"))
    print(f"model {runs[0]['model']['name']}, {runs[0]['threads']} threads, {args.repetitions} repetitions, "
          "interleaved")
    print(f"{'version':>10} {'engine':>22} " + " ".join(f"{t['name']:>20}" for t in runs[0]["tests"]))
    for version, run in zip(versions, runs):
        engine = run["engine"]
        cells = [f"{t['stats']['rate']['mean']:>11.2f} ± {t['stats']['rate']['ci95'] or 0:<6.2f}"
                 if (t.get("stats") or {}).get("rate") else f"{t['status']:>20}" for t in run["tests"]]
        print(f"{version:>10} "
              f"{str(engine.get('commit') or engine['details'].get('built_from')):>22} " + " ".join(cells))
        for test in run["tests"]:
            if test["status"] != "ok":
                print(f"  {version} {test['name']}: {test['status']}: {test.get('error')}")


if __name__ == "__main__":
    main()
