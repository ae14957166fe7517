"""The lines of a run's manifest that say what was run and on what, the same in the terminal
(`pdx show`) and on a page: what a run pdx measured recorded, and for an imported run only what the
importing tool's file told, nothing filled in (no seed it never used, no hash of a file never read)."""

from __future__ import annotations

UNHASHED = "not hashed (the importing tool named the model; pdx never read its file)"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def model_hash_text(model: dict) -> str:
    """The model's sha256, or why there is none: an imported model known by its description only has
    an id made from that description, which is no file's hash."""
    if str((model.get("extra") or {}).get("identity", "")).startswith("described"):
        return UNHASHED
    return model.get("sha256") or "?"


def repetitions_text(counts: list[int]) -> str:
    """"5 repetitions of 2 tests", or the total and the range where tests differ."""
    if not counts:
        return "no tests"
    if len(set(counts)) == 1:
        return f"{plural(counts[0], 'repetition')} of {plural(len(counts), 'test')}"
    return f"{plural(sum(counts), 'repetition')} over {len(counts)} tests, {min(counts)} to {max(counts)} each"


def workload_text(run: dict) -> str:
    """Repetitions, warm-up and seed as the run used them. An imported run's repetitions are those its
    samples hold; its warm-up is said only where the importer knew it, and it has no seed."""
    workload = run.get("workload") or {}
    warmup = workload.get("warmup") or 0
    if run.get("origin", "pdx") != "pdx":
        counts = [len(t.get("samples") or []) for t in run.get("tests") or []]
        reps = repetitions_text(counts) if any(counts) else "repetitions not in the file (the tool's own figures)"
        # An importer's warm-up is the tool's default where its output does not say (pdx.registry.importers.kit's
        # modules).
        return ", ".join([reps, *([f"{plural(warmup, 'warm-up')} (the tool's default)"] if warmup else []),
                          f"as {run['origin']} ran them (no seed)"])
    reps = plural(workload.get("repetitions") or 0, "repetition")
    if workload.get("target_ci"):
        reps = (f"repeated to a {workload['target_ci']:.1%} CI (first {workload['repetitions']}, "
                f"at most {workload['max_repetitions']})")
    return f"{reps}, {plural(warmup, 'warm-up')}, seed {workload.get('seed', '?')}"
