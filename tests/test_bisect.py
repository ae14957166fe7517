"""``pdx bisect`` for real: a git repository made here, whose commits each set the work per token of a
stand-in engine (tests/data/standin_engine: a real C program built by CMake, printing llama-bench's
JSONL with its own measured times). One commit multiplies the work by six; the bisect builds commits through
the llamacpp plugin's builder (a shared clone of the repository, CMake, cached by commit and flags),
benches each through pdx's own bench path into the registry, judges them on their samples, and must
name that commit within ceil(log2(n)) + 1 builds, leaving the repository as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import pdx_here, run_pdx_here
from standin_engine import TOOLS, git, make_repo

# WORK_PER_TOKEN of each commit after the initial one: changes under 1%, and at index PLANTED six times
# the work, kept after it. The last commit does not compile. On this project's shared 2-core machines a
# repetition of the same binary takes from 1x to 3x its quietest time (the other tenants' load), so the
# bisect judges at --factor 2 on 9 repetitions: the planted step stands far beyond it, the noise does not.
WORK = [20000, 20100, 19900, 20050, 19950, 120000, 120300, 119700]
PLANTED = 5
FACTOR = ["--factor", "2"]
BENCH = ["-p", "128", "-n", "0", "-r", "9", "-t", "1"]

pytestmark = pytest.mark.skipif(not TOOLS, reason="needs git, cmake and a C compiler")


@pytest.fixture(scope="module")
def engine_repo(tmp_path_factory) -> tuple[Path, list[str]]:
    """The repository and its commits: [0] the good one, [PLANTED] the slow one, [-1] a broken build."""
    repo = tmp_path_factory.mktemp("standin") / "engine"
    commits = make_repo(repo, WORK)
    (repo / "llama-bench.c").write_text("this is not C\n")
    git(repo, "commit", "--quiet", "-am", "break the build")
    commits.append(git(repo, "rev-parse", "HEAD"))
    return repo, commits


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> Path:
    """One build folder for the module: a commit built by one test is found cached by the next."""
    return tmp_path_factory.mktemp("builds")


def bisect(repo: Path, builds: Path, url: str, good: str, bad: str, model, *extra: str):
    return run_pdx_here("bisect", "--engine", "llamacpp", "--source", str(repo), "--good", good, "--bad", bad,
                        "--build-dir", str(builds), "--registry", url, *FACTOR, *extra, "--", "-m", str(model), *BENCH)


def test_bisect_names_the_commit_that_slowed_the_engine_and_stores_every_run(engine_repo, builds, tiny_gguf,
                                                                             tmp_path):
    repo, commits = engine_repo
    state = (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "worktree", "list"))
    url = f"sqlite:///{tmp_path / 'bisect.sqlite'}"
    result = bisect(repo, builds, url, commits[0], commits[7], tiny_gguf, "--json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["first_bad"] == commits[PLANTED]
    assert found["commits"] == 8 and found["bound"] == 4  # ceil(log2(8)) + 1
    assert found["builds"] <= found["bound"]
    verdicts = {v["commit"]: v for v in found["verdicts"]}
    for commit, verdict in verdicts.items():  # every midpoint judged as its work says
        slow = commits.index(commit) >= PLANTED
        assert (verdict["verdict"], verdict["exit_code"]) == (("bad", 1) if slow else ("good", 0))
        assert not verdict["cached"]
    # every run is in the registry, tagged, with the commit it was built from as its engine's
    runs = {r["id"]: r for r in json.loads(pdx_here("runs", "--registry", url, "--json"))}
    made = [found["good"]["run"], *(v["run"] for v in found["verdicts"])]
    assert sorted(runs) == sorted(made)
    for run_id, commit in zip(made, [commits[0], *verdicts]):
        shown = json.loads(pdx_here("show", run_id, "--registry", url, "--json"))
        assert shown["engine"]["commit"] == commit[:7] and "bisect" in shown["tags"]
        assert shown["engine"]["details"]["built_from"] == f"commit {commit}"
        assert shown["engine"]["version"] == f"b{commits.index(commit) + 2}"  # the commit count, with the initial
    # ... and in the engine's history, in commit order. (Whether its four points show the step is
    # step detection's question, tested in tests/test_history.py: with four runs on a machine whose
    # noise between runs reaches 3x, the penalised fit does not always keep it.)
    history = json.loads(pdx_here("history", "--registry", url, "--json"))
    (timeline,) = history["timelines"]
    assert [p["version"] for p in timeline["points"]] == sorted(
        (f"b{commits.index(c) + 2}" for c in [commits[0], *verdicts]), key=lambda v: int(v[1:]))
    assert sorted(p["run"] for p in timeline["points"]) == sorted(made)
    assert f"{len(made)} runs, latest" in pdx_here("history", "--registry", url)  # the step itself: see above
    # the source checkout is as it was: HEAD, files and worktrees
    assert (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "worktree", "list")) == state

    # A narrower bisect finds every build cached, and the same commit.
    again = bisect(repo, builds, f"sqlite:///{tmp_path / 'again.sqlite'}", commits[PLANTED - 1], commits[PLANTED + 1],
                   tiny_gguf, "--json")
    assert again.returncode == 0, again.stderr
    redone = json.loads(again.stdout)
    assert redone["first_bad"] == commits[PLANTED]
    assert redone["good"]["cached"] and all(v["cached"] for v in redone["verdicts"])
    assert "building" not in again.stderr


def test_a_range_with_no_slowdown_is_refused_in_one_line(engine_repo, builds, tiny_gguf, tmp_path):
    repo, commits = engine_repo
    result = bisect(repo, builds, f"sqlite:///{tmp_path / 'r.sqlite'}", commits[PLANTED], commits[7], tiny_gguf)
    assert result.returncode == 1, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("pdx: error")]
    assert "the range is wrong" in line and commits[7][:12] in line


def test_a_commit_that_does_not_build_stops_the_bisect_as_untestable(engine_repo, builds, tiny_gguf, tmp_path):
    repo, commits = engine_repo
    result = bisect(repo, builds, f"sqlite:///{tmp_path / 'b.sqlite'}", commits[7], commits[8], tiny_gguf)
    assert result.returncode == 125, result.stderr  # git bisect run's "cannot be tested"
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("pdx: error")]
    assert f"llama.cpp {commits[8][:12]} did not build" in line and "see the log" in line


def test_an_undecided_commit_is_benched_again_with_the_good_one_and_judged_on_both(engine_repo, builds, tiny_gguf,
                                                                                   tmp_path):
    """Two repetitions a side can never reach p < 0.05 (Mann-Whitney's smallest p for 2 vs 2 is 1/3), so the
    six-fold slower commits are "beyond the factor, not significant" at first. Without retries that is the
    end (125); with one, the commit and the good one are benched again and 4 vs 4 repetitions decide."""
    repo, commits = engine_repo
    few = [*BENCH[:BENCH.index("-r")], "-r", "2", *BENCH[BENCH.index("-r") + 2:]]

    def narrow(url: str, *extra: str):
        return run_pdx_here("bisect", "--engine", "llamacpp", "--source", str(repo), "--good", commits[PLANTED - 1],
                            "--bad", commits[PLANTED + 1], "--build-dir", str(builds), "--registry", url, *FACTOR,
                            *extra, "--", "-m", str(tiny_gguf), *few)

    stuck = narrow(f"sqlite:///{tmp_path / 'stuck.sqlite'}", "--retries", "0")
    assert stuck.returncode == 125, stuck.stderr
    (line,) = [x for x in stuck.stderr.splitlines() if x.startswith("pdx: error")]
    assert "is neither good nor bad" in line and "cannot reach p < 0.05" in line
    url = f"sqlite:///{tmp_path / 'decided.sqlite'}"
    decided = narrow(url, "--json")
    assert decided.returncode == 0, decided.stderr
    found = json.loads(decided.stdout)
    assert found["first_bad"] == commits[PLANTED] and "benching it and the good commit again" in decided.stderr
    repeated = [v for v in found["verdicts"] if v["repeats"]]
    assert repeated and all(v["verdict"] == "bad" for v in repeated)
    stored = {r["id"] for r in json.loads(pdx_here("runs", "--registry", url, "--json"))}
    assert {r for v in repeated for r in v["repeats"]} <= stored  # every repeat is a stored run too


def test_pooling_joins_each_test_s_samples_and_keeps_a_failure():
    from pdx.api.bisect import pooled

    first = {"id": "a", "tests": [{"name": "pp64", "status": "ok", "samples": [{"ns": 1}]},
                                  {"name": "tg8", "status": "ok", "samples": [{"ns": 2}]}]}
    again = {"id": "b", "tests": [{"name": "pp64", "status": "ok", "samples": [{"ns": 3}]},
                                  {"name": "tg8", "status": "failed", "samples": []}]}
    both = pooled(first, again)
    assert both["id"] == "a" and both["tests"][0]["samples"] == [{"ns": 1}, {"ns": 3}]
    assert both["tests"][1]["status"] == "failed"  # a test that failed when benched again is not decided by half


@pytest.mark.parametrize("args, message", [
    (["--good", "HEAD", "--bad", "HEAD~3"], "is not an ancestor of --bad"),
    (["--good", "nosuchref", "--bad", "HEAD"], "--good nosuchref: no such commit"),
    (["--good", "HEAD", "--bad", "HEAD"], "are the same commit"),
    (["--good", "--output=x", "--bad", "HEAD"], "--good '--output=x' is not a commit"),
])
def test_a_wrong_range_is_one_line(engine_repo, tmp_path, tiny_gguf, args, message):
    repo, _ = engine_repo
    result = run_pdx_here("bisect", "--engine", "llamacpp", "--source", str(repo), *args,
                          "--build-dir", str(tmp_path / "b"), "--registry", f"sqlite:///{tmp_path / 'x.sqlite'}",
                          "--", "-m", str(tiny_gguf), *BENCH)
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) <= 2


def test_bisect_refuses_an_engine_it_cannot_build_and_a_folder_that_is_no_repository(tmp_path, tiny_gguf):
    result = run_pdx_here("bisect", "--engine", "vllm", "--source", str(tmp_path), "--good", "a", "--bad", "b")
    assert result.returncode == 2
    assert "'vllm' cannot be built from a commit; engines that can: llamacpp" in result.stderr
    result = run_pdx_here("bisect", "--engine", "llamacpp", "--source", str(tmp_path), "--good", "a", "--bad", "b",
                          "--registry", f"sqlite:///{tmp_path / 'x.sqlite'}", "--", "-m", str(tiny_gguf))
    assert result.returncode == 2 and "not a git repository" in result.stderr
