"""llama-server's log: each finished request's ``print_timing`` lines (its prompt eval and eval
times and token counts, and where it speculated, ``draft acceptance = R (A accepted / G generated)``),
as people paste them and as the server writes them (pdx keeps the log of a server it starts).

Every request with both times becomes a sample: of ``pp{n}`` (its prompt tokens in its prompt eval
time) and of ``tg{n}`` (its generated tokens in its eval time), requests of the same sizes being
repetitions of one test. A speculating request's drafted and accepted counts ride with its ``tg``
sample (``Sample.engine["speculation"]``), so the acceptance, tokens per target pass and the
speculative ceiling come out as for a run pdx made. The method is named where the log names it
(a ``statistics draft-eagle3:`` line in newer servers); the model where the log's ``loading model``
line does (give ``pdx import --model`` to attach the file itself).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from pdx.registry.bundle import fail
from pdx.registry.importers.common import (described_hardware, described_model, file_facts, imported_run, integer,
                                          make_test, number, sample)
from pdx.workload import TestSpec

ORIGIN = "llama-server log"
_TIMING = re.compile(r"print_timing: id\s+\d+ \| task (\d+) \|\s*(.*)$")
_TIME = re.compile(r"^(prompt eval|eval) time =\s*([\d.]+) ms /\s*(\d+) tokens")
_DRAFT = re.compile(r"^draft acceptance(?: rate)? =\s*[\d.]+ \(\s*(\d+) accepted /\s*(\d+) generated\)")
_METHOD = re.compile(r"\bstatistics\s+([a-z][\w-]*):")
_MODEL = re.compile(r"load_model: loading model '([^']*)'")
_DRAFT_MODEL = re.compile(r"loading draft model '([^']*)'")


def looks_like(text: str) -> bool:
    head = text[:200000]
    return "print_timing:" in head and "eval time =" in head


def _tasks(text: str, source) -> tuple[dict[str, dict], dict]:
    """Each task's figures, in the order they finished; and what the log says of the server."""
    tasks: dict[str, dict] = {}
    server: dict = {}
    for line_no, line in enumerate(text.splitlines(), 1):
        if match := _TIMING.search(line):
            task, said = match[1], match[2].strip()
            if found := _TIME.match(said):
                key = "prompt" if found[1] == "prompt eval" else "eval"
                tasks.setdefault(task, {})[key] = (number(float(found[2]), f"line {line_no}: {found[1]} time", source),
                                                   integer(int(found[3]), f"line {line_no}: tokens", source))
            elif found := _DRAFT.match(said):
                accepted, drafted = (integer(int(v), f"line {line_no}: draft tokens", source) for v in found.groups())
                tasks.setdefault(task, {})["draft"] = (drafted, accepted)
        elif match := _METHOD.search(line):
            server["method"] = match[1]
        elif match := _DRAFT_MODEL.search(line):
            server["draft_model"] = match[1]
        elif match := _MODEL.search(line):
            server.setdefault("model", match[1])
        elif "synthetic speculative acceptance is enabled" in line:
            server["synthetic"] = True
    return tasks, server


def _speculation(server: dict, speculated: bool) -> dict | None:
    if not speculated:
        return None
    found = {"method": server.get("method"), "source": "llama-server's log"}
    if server.get("draft_model"):
        found["draft_model"] = {"path": server["draft_model"], "name": Path(server["draft_model"]).stem}
    if not server.get("method"):
        found["note"] = "the log does not name the method (a draft model, or an n-gram lookup)"
    if server.get("synthetic"):
        found["note"] = "acceptance set by llama-server's --spec-synth-len, not by the draft"
    return found


def read(path: Path, text: str, hardware: str | None = None) -> list[dict]:
    tasks, server = _tasks(text, path)
    done = [t for t in tasks.values() if "prompt" in t and "eval" in t]
    if not done:
        raise fail(path, "no request with both a 'prompt eval time' and an 'eval time' line (truncated?)")
    pp: dict[int, list] = {}
    tg: dict[int, list] = {}
    for task in done:
        (prompt_ms, n_prompt), (eval_ms, n_gen) = task["prompt"], task["eval"]
        if n_prompt and prompt_ms:
            pp.setdefault(n_prompt, []).append(sample(prompt_ms * 1e6, n_prompt, 0))
        if n_gen and eval_ms:
            engine = {}
            if "draft" in task:
                drafted, accepted = task["draft"]
                engine["speculation"] = {"drafted": drafted, "accepted": min(accepted, drafted), "tokens": n_gen}
            tg.setdefault(n_gen, []).append(sample(eval_ms * 1e6, 0, n_gen, engine=engine))
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(microsecond=0).isoformat()
    tests = []
    for kind, groups in (("pp", pp), ("tg", tg)):
        for n, samples in sorted(groups.items()):
            spec = TestSpec(n, 0) if kind == "pp" else TestSpec(0, n)
            tests.append(make_test(len(tests), spec, samples, {"timing": "llama-server's own, from its log"}, when))
    if not tests:
        raise fail(path, "no request with a prompt or generated tokens")
    settings = {}
    speculation = _speculation(server, any("draft" in t for t in done))
    if speculation:
        settings["speculation"] = speculation
    name = Path(server["model"]).name if server.get("model") else "unknown (not named by the log lines)"
    # described_by: a model no log names is not another tool's unnamed model (their sha256 would agree)
    model = described_model(server.get("model") or "?", name, "gguf", described_by=ORIGIN)
    return [imported_run(ORIGIN, "llamacpp-server", {"name": "llama.cpp", "settings": settings}, model,
                         described_hardware(chip=hardware), tests,
                         file_facts(path, text, "llama-server log") | {"created_at": "the file's modification time"},
                         created_at=when, repetitions=max(len(t["samples"]) for t in tests))]
