"""Reading a git checkout pdx builds an engine from (``pdx bisect``): its commits, by ``git`` itself.
Nothing here writes to the checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pdx.contract.errors import PdxError


def git(source: Path, *args: str) -> str:
    """``git -C source ARGS``'s output; a one-line error naming the command where it fails."""
    try:
        out = subprocess.run(["git", "-C", str(source), *args], capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise PdxError("git is not installed", "install git: pdx reads the source's commits with it") from None
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise PdxError(f"`git {' '.join(args)}` in {source} failed: {why}")
    return out.stdout.strip()


def resolve(source: Path, ref: str, what: str) -> str:
    """The full hash of commit ``ref`` (a hash, tag or branch) in ``source``; ``what`` names the option."""
    if not ref or ref.startswith("-"):  # git would read it as an option
        raise PdxError(f"{what} {ref!r} is not a commit", "give a commit hash, tag or branch")
    if not (Path(source) / ".git").exists():
        git(source, "rev-parse", "--git-dir")  # a worktree or bare repository has no .git folder: ask git
    try:
        return git(source, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except PdxError:
        raise PdxError(f"{what} {ref}: no such commit in "
                       f"{source}", "give a commit hash, tag or branch of that checkout") from None


def commits_between(source: Path, good: str, bad: str) -> list[str]:
    """The commits after ``good`` up to ``bad`` (included), oldest first, on the path between them (as
    ``git bisect`` tests them; merges' side branches that do not lead from good to bad are left out)."""
    try:
        git(source, "merge-base", "--is-ancestor", good, bad)
    except PdxError:
        raise PdxError(f"--good {good[:12]} is not an ancestor of --bad {bad[:12]}",
                       "give the older, good commit as --good and the newer, bad one as --bad") from None
    found = git(source, "rev-list", "--reverse", "--ancestry-path", f"{good}..{bad}").split()
    if not found:
        raise PdxError(f"--good and --bad are the same commit ({good[:12]})", "give two different commits")
    return found


def subject(source: Path, commit: str) -> str:
    """A commit's one-line message."""
    return git(source, "log", "-1", "--format=%s", commit)
