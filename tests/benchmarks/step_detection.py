"""How often pdx's step detection finds a step in a flat timeline, and how often it finds a planted one
at its place: seeded series of runs (a level, run-to-run noise, repetitions around each run's mean).

    python tests/benchmarks/step_detection.py [--series 300] [--run-sd 0.02] [--within 0.01] [--step 0.15]
"""

from __future__ import annotations

import argparse
import random

from pdx.reports.sample_compare import DEFAULT_FACTOR
from pdx.domain.stats.steps import Point, detect_steps


def series(rng: random.Random, n: int, run_sd: float, within: float, step_at: int | None = None,
           size: float = 0.0, reps: int = 5) -> list[Point]:
    points = []
    for i in range(n):
        level = 100.0 * (1 - size if step_at is not None and i >= step_at else 1)
        mean = level * (1 + rng.gauss(0, run_sd))
        points.append(Point.of(f"v{i}", [mean * (1 + rng.gauss(0, within)) for _ in range(reps)]))
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=300)
    parser.add_argument("--run-sd", type=float, default=0.02, help="run-to-run noise (relative)")
    parser.add_argument("--within", type=float, default=0.01, help="noise between one run's repetitions")
    parser.add_argument("--step", type=float, default=0.15, help="the planted slowdown (relative)")
    args = parser.parse_args()
    rng = random.Random(1)
    print(f"{'runs':>5} {'flat: a step (factor 1)':>24} {'flat: a step (factor ' + str(DEFAULT_FACTOR) + ')':>28} "
          f"{'planted: found at its place':>28}")
    for n in (4, 6, 10, 20, 40):
        noise = lambda factor: sum(bool(detect_steps(series(rng, n, args.run_sd, args.within), factor))
                                   for _ in range(args.series)) / args.series
        found = sum([s.index for s in detect_steps(series(rng, n, args.run_sd, args.within, n // 2, args.step),
                                                   DEFAULT_FACTOR)] == [n // 2] for _ in range(args.series))
        print(f"{n:>5} {noise(1.0):>24.1%} {noise(DEFAULT_FACTOR):>28.1%} {found / args.series:>28.1%}")


if __name__ == "__main__":
    main()
