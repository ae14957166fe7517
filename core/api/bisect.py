"""``pdx bisect``: the first commit of an engine's source that made a benchmark slower.

The good commit is built and benched first: it is the reference every other commit is judged
against. Then a binary search over the commits after it up to the bad one (included), each midpoint
built (cached by commit and flags: see the engine's :class:`~pdx.contract.engine_build.EngineBuilder`),
benched through :func:`pdx.api.run_benchmark` (so every run is stored, its engine version the
commit's, and the engine's history fills in as it bisects) and judged as ``pdx check`` judges two
runs (:func:`pdx.reports.sample_compare.compare_runs`: Mann-Whitney U on every stored repetition, and a change
beyond a minimum factor): bad when any test is significantly slower than the good commit's, good
when none is slower beyond the factor, undecided otherwise. An undecided commit is benched again, and
the good commit with it (their builds are cached), and judged on every repetition of both so far
(``retries`` times at most, as asv repeats a step it cannot call); still undecided, it is an error
asking for more repetitions. The repeats are stored runs too, and the pooled reference judges every
later commit.

The bad end is not benched first: the search takes "nothing in the range is slower" as one more
outcome, past the bad commit, so it tests the bad commit only where every earlier midpoint was good,
and then that test is the range's own check. With n the commits from good to bad (both included),
it builds at most ceil(log2(n)) + 1: the good one and ceil(log2(n)) midpoints. Per commit the
verdict is ``git bisect run``'s exit code: 0 good, 1 bad (:attr:`Verdict.exit_code`); ``pdx bisect``
itself exits 0 when it names the first bad commit, 1 when the range is wrong (the bad commit is no
slower), 125 when a commit cannot be tested (its build or run failed, or its samples are undecided).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from pdx.api import BenchConfig, run_benchmark
from pdx.contract.engine_build import EngineBuilder
from pdx.contract.errors import PdxError
from pdx.measure.gitrepo import commits_between, resolve, subject
from pdx.registry import Registry
from pdx.reports.sample_compare import (DEFAULT_ALPHA, DEFAULT_FACTOR, DEFAULT_RETRIES, MARKS, TestComparison,
                                        compare_runs)

BISECT_TAG = "bisect"  # every run pdx bisect makes carries it


class WrongRange(PdxError):
    """The bad commit is no slower than the good one: there is nothing to find."""

    exit_code = 1


class Untestable(PdxError):
    """A commit that did not build, or whose run failed: ``git bisect run``'s 125 (cannot be tested)."""

    exit_code = 125


class Undecided(Untestable):
    """A commit's samples say neither good nor bad."""


@dataclass(frozen=True)
class Verdict:
    """One commit built, benched and judged against the good commit's run."""

    commit: str
    subject: str
    run_id: str
    build: str  # the build's label
    cached: bool  # the build was already there
    bad: bool
    comparisons: list[TestComparison] = field(default_factory=list)
    repeats: tuple[str, ...] = ()  # the runs of this commit benched again while undecided

    @property
    def exit_code(self) -> int:
        """What ``git bisect run`` takes from a test script: 0 good, 1 bad."""
        return 1 if self.bad else 0

    def to_dict(self) -> dict:
        return {"commit": self.commit, "subject": self.subject, "run": self.run_id, "build": self.build,
                "cached": self.cached, "verdict": "bad" if self.bad else "good", "exit_code": self.exit_code,
                "repeats": list(self.repeats), "tests": [c.to_dict() for c in self.comparisons]}


@dataclass
class BisectResult:
    good: Verdict  # the reference
    bad_commit: str
    commits: int  # from good to bad, both included
    verdicts: list[Verdict]  # the midpoints, in the order they were tested
    first_bad: Verdict | None = None

    @property
    def bound(self) -> int:
        return build_bound(self.commits)

    @property
    def builds(self) -> int:
        return 1 + len(self.verdicts)

    def to_dict(self) -> dict:
        return {"first_bad": self.first_bad.commit if self.first_bad else None,
                "subject": self.first_bad.subject if self.first_bad else None,
                "good": self.good.to_dict(), "bad": self.bad_commit, "commits": self.commits,
                "builds": self.builds, "bound": self.bound, "verdicts": [v.to_dict() for v in self.verdicts]}


def build_bound(commits: int) -> int:
    """The most builds a bisect over ``commits`` (good and bad included) makes: the good one, and a
    binary search among the other commits and "none of them"."""
    return math.ceil(math.log2(commits)) + 1


def judge(reference: dict, run: dict, factor: float, alpha: float) -> tuple[bool, list[TestComparison]]:
    """(bad, the comparisons) of ``run`` against the good commit's; Undecided where the samples say
    neither (a change beyond the factor that is not significant, a test that failed or is missing)."""
    measured = {t["name"] for t in reference["tests"] if t["status"] == "ok"}  # a test skipped there judges nothing
    comparisons = [c for c in compare_runs(reference, run, factor, alpha) if c.name in measured]
    if any(c.mark == "+" for c in comparisons):
        return True, comparisons
    unclear = [c for c in comparisons if c.mark not in (" ", "-")]
    if unclear:
        c = unclear[0]
        ratio = f" ({c.ratio:.2f}x the time, p={c.p_value:.3g})" if c.ratio and c.p_value is not None else ""
        raise Undecided(f"{c.name}: {MARKS[c.mark]}{ratio}{': ' + c.note if c.note else ''}",
                        "repeat more (-r in the bench options), or raise --factor")
    return False, comparisons


def pooled(run: dict, again: dict) -> dict:
    """``run`` with each test's samples joined by the same test's in ``again`` (the same build benched
    once more), for judging on both; a test that failed in either is failed. Not stored: both runs are."""
    more = {t["name"]: t for t in again["tests"]}
    tests = []
    for test in run["tests"]:
        other = more.get(test["name"])
        if other is None or other["status"] != "ok":
            tests.append(other or test)
        else:
            tests.append(test | {"samples": [*(test.get("samples") or []), *(other.get("samples") or [])]})
    return run | {"tests": tests}


def bisect(registry: Registry, builder: EngineBuilder, source: Path, good: str, bad: str, config: BenchConfig,
           builds: Path | None = None, factor: float = DEFAULT_FACTOR, alpha: float = DEFAULT_ALPHA,
           say: Callable[[str], None] = lambda line: None, retries: int = DEFAULT_RETRIES) -> BisectResult:
    """The first commit after ``good`` up to ``bad`` whose runs of ``config``'s workload are slower."""
    build_commit = builder.commit
    if build_commit is None:
        raise PdxError(f"engine {builder.name} cannot be built from a commit", "see `pdx bisect --help`")
    source = Path(source).expanduser().absolute()
    good, bad = resolve(source, good, "--good"), resolve(source, bad, "--bad")
    candidates = commits_between(source, good, bad)
    result = BisectResult(good=None, bad_commit=bad, commits=len(candidates) + 1, verdicts=[])  # type: ignore[arg-type]
    say(f"bisecting {len(candidates)} commit(s) after {good[:12]} up to {bad[:12]}: "
        f"at most {result.bound} builds")
    config = replace(config, backend=builder.backend, tags=[*config.tags, BISECT_TAG])

    def bench(commit: str) -> tuple[dict, Verdict]:
        try:
            built = build_commit(source, commit, builds, say)
        except Untestable:
            raise
        except PdxError as exc:
            raise Untestable(exc.message, exc.hint) from None
        say(f"{commit[:12]}: {built.label}{', cached' if built.cached else ''}; benching")
        run = run_benchmark(replace(config, options=config.options | built.options), registry)
        if run["status"] != "complete":
            raise Untestable(f"commit {commit[:12]}: its run {run['id'][:8]} is {run['status']}: "
                           f"{run.get('error') or 'no test completed'}", "see `pdx show " + run["id"][:8] + "`")
        return run, Verdict(commit, subject(source, commit), run["id"], built.label, built.cached, False)

    reference, result.good = bench(good)
    say(f"{good[:12]}: the reference (good), run {reference['id'][:8]}")
    lo, hi = 0, len(candidates)  # the first bad is candidates[lo..hi-1], or none (hi == len)
    while lo < hi:
        mid = (lo + hi) // 2
        run, verdict = bench(candidates[mid])
        for attempt in range(retries + 1):
            try:
                is_bad, comparisons = judge(reference, run, factor, alpha)
                break
            except Undecided as exc:
                if attempt == retries:
                    raise Undecided(f"commit {candidates[mid][:12]} is neither good nor bad"
                                    f"{f' after {attempt} more benches' if attempt else ''}: {exc.message}",
                                    exc.hint) from None
                say(f"{candidates[mid][:12]}: undecided ({exc.message}); benching it and the good commit again")
                reference = pooled(reference, bench(good)[0])
                again, _ = bench(candidates[mid])
                run = pooled(run, again)
                verdict = replace(verdict, repeats=(*verdict.repeats, again["id"]))
        verdict = replace(verdict, bad=is_bad, comparisons=comparisons)
        result.verdicts.append(verdict)
        say(f"{candidates[mid][:12]}: {'bad' if is_bad else 'good'} ({_summary(comparisons)}), run {run['id'][:8]}")
        lo, hi = (lo, mid) if is_bad else (mid + 1, hi)
    if lo == len(candidates):
        raise WrongRange(f"the range is wrong: --bad {bad[:12]} is no slower than --good {good[:12]} "
                         f"({_summary(result.verdicts[-1].comparisons)})",
                         "check the commits, or bench the tests that show the slowdown (the options after --)")
    result.first_bad = next(v for v in result.verdicts if v.commit == candidates[lo])
    return result


def _summary(comparisons: list[TestComparison]) -> str:
    """``pp64 2.01x the time (p=0.008)``, per test."""
    return ", ".join(f"{c.name} {c.ratio:.2f}x the time (p={c.p_value:.2g})" if c.ratio and c.p_value is not None
                     else f"{c.name}: {MARKS[c.mark]}" for c in comparisons)
