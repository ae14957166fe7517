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
from typing import Any

from pdx.contract import record
from pdx.registry.bundle import fail
from pdx.registry.importers.common import (described_hardware, described_model, file_facts, imported_run, integer,
                                          make_test, number, sample)
from pdx.domain.workload import TestSpec

ORIGIN = "llama-server log"
_TIMING = re.compile(r"print_timing: id\s+\d+ \| task (\d+) \|\s*(.*)$")
# Figures are taken as whatever the line holds there and then checked, so a negative, fractional or NaN
# count is refused naming its line rather than the line being passed over.
_TIME = re.compile(r"^(prompt eval|eval) time =\s*(\S+) ms /\s*(\S+) tokens")
_DRAFT = re.compile(r"^draft acceptance(?: rate)? =\s*\S+ \(\s*(\S+) accepted /\s*(\S+) generated\)")
_METHOD = re.compile(r"\bstatistics\s+([a-z][\w-]*):")
_MODEL = re.compile(r"load_model: loading model '([^']*)'")
_DRAFT_MODEL = re.compile(r"loading draft model '([^']*)'")


def looks_like(text: str) -> bool:
    head = text[:200000]
    return "print_timing:" in head and "eval time =" in head


def _figure(text: str, what: str, source: str | Path, whole: bool = False) -> float | int:
    """A figure of a log line: a finite number at least 0 (whole for a count), else a one-line refusal."""
    try:
        value = float(text)
    except ValueError:
        raise fail(source, f"{what} is {text[:24]!r}, not a number") from None
    return integer(value, what, source) if whole else number(value, what, source)


def _tasks(text: str, source: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each request's figures, in the order they finished; and what the log says of the server. A task id
    seen again once its request had both times is a new request (a restarted server counts from 0 again):
    both are kept."""
    tasks: list[dict[str, Any]] = []
    open_: dict[str, dict[str, Any]] = {}  # task id -> its request still being read
    server: dict[str, Any] = {}
    for line_no, line in enumerate(text.splitlines(), 1):
        if match := _TIMING.search(line):
            task, said = match[1], match[2].strip()
            if found := _TIME.match(said):
                key = "prompt" if found[1] == "prompt eval" else "eval"
                where = f"line {line_no}: {found[1]}"
                figures = (_figure(found[2], f"{where} "
                                   f"time", source), _figure(found[3], f"{where} tokens", source, True))
                if figures[1] and not figures[0]:
                    raise fail(source, f"{where} time is {found[2]} ms for {figures[1]} tokens: no measurement",
                               "a request's time is never zero; import the log without that request")
                entry = open_.get(task)
                if entry is None or key in entry:  # a new request, or this id's earlier one is complete
                    entry = open_[task] = {"line": line_no}
                    tasks.append(entry)
                entry[key] = figures
            elif found := _DRAFT.match(said):
                accepted, drafted = (_figure(v, f"line {line_no}: draft tokens", source, True) for v in found.groups())
                if accepted > drafted:
                    raise fail(source, f"line {line_no}: {accepted} accepted of {drafted} drafted tokens: a pass "
                                       "accepts only tokens that were drafted")
                entry = open_.get(task)
                if entry is None or "draft" in entry:
                    entry = open_[task] = {"line": line_no}
                    tasks.append(entry)
                entry["draft"] = (drafted, accepted)
        elif match := _METHOD.search(line):
            server["method"] = match[1]
        elif match := _DRAFT_MODEL.search(line):
            server["draft_model"] = _named(match[1], line_no, source)
        elif match := _MODEL.search(line):
            server.setdefault("model", _named(match[1], line_no, source))
        elif "synthetic speculative acceptance is enabled" in line:
            server["synthetic"] = True
    return tasks, server


def _named(path: str, line_no: int, source: str | Path) -> str:
    """A model's path as the log names it; one holding a control character (a NUL would cut it short) is refused."""
    if not path.isprintable():
        raise fail(source, f"line {line_no}: the model's name {ascii(path)[:60]} holds a control character")
    return path


def _speculation(server: dict[str, Any], speculated: bool) -> dict[str, Any] | None:
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


def read(path: Path, text: str, hardware: str | None = None) -> list[dict[str, Any]]:
    tasks, server = _tasks(text, path)
    done = [t for t in tasks if "prompt" in t and "eval" in t]
    if not done:
        raise fail(path, "no request with both a 'prompt eval time' and an 'eval time' line (truncated?)")
    pp: dict[int, list[Any]] = {}
    tg: dict[int, list[Any]] = {}
    for task in done:
        (prompt_ms, n_prompt), (eval_ms, n_gen) = task["prompt"], task["eval"]
        if n_prompt and prompt_ms:
            pp.setdefault(n_prompt, []).append(sample(prompt_ms * 1e6, n_prompt, 0))
        if n_gen and eval_ms:
            engine = {}
            if "draft" in task:
                drafted, accepted = task["draft"]
                engine["speculation"] = {"drafted": drafted, "accepted": accepted, "tokens": n_gen}
            tg.setdefault(n_gen, []).append(sample(eval_ms * 1e6, 0, n_gen, engine=engine))
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(microsecond=0).isoformat()
    tests: list[record.Test] = []
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
