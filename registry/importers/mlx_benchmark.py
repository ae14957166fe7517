"""``mlx_lm.benchmark`` text output (its only output format).

It prints one line per trial (``Trial 1:  prompt_tps=..., generation_tps=...,
peak_memory=...``) and a closing ``Averages:`` line, after one warm-up. Each
trial becomes a sample of a ``pp{p}+tg{g}`` test (``/b{B}`` when batched) whose
phase times are derived from mlx-lm's own rates: tokens / prompt_tps and
tokens / generation_tps. Those are mlx-lm's definitions, kept as it reported
them (its prompt_tps includes the first decode step), and each trial's
figures sit beside the sample. The text does not name the model: give it to
``pdx import --model`` to attach the real one.
"""

from __future__ import annotations

import re
from typing import Any
from datetime import datetime, timezone
from pathlib import Path

from pdx.registry.bundle import fail
from pdx.registry.importers.common import chip_named_in, described_hardware, described_model, file_facts, imported_run
from pdx.registry.importers.common import make_test, number, sample
from pdx.domain.workload import TestSpec

ORIGIN = "mlx_lm.benchmark"
# "Timing with prompt_tokens=64, generation_tokens=16, batch_size=2." (the first releases: "... =2048 and
# generation_tokens=128.", no batch)
_HEADER = re.compile(r"^Timing with prompt_tokens=(\d+)(?:,| and) generation_tokens=(\d+)(?:, batch_size=(\d+))?\.\s*$")
# The command line: the tool's name then its options or nothing, so a sentence that names the tool ("my
# mlx_lm.benchmark run on an M4") is no command (it would split the paste into a block with no output)
_COMMAND = re.compile(r"mlx_lm[._]benchmark(?P<args>(?:\s+-.*)?)\s*$", re.M)
_OPTION = re.compile(r"(?:^|\s)(?P<flag>--model|-m|--prompt-tokens|-p|--generation-tokens|-g|--batch-size|-b)"
                     r"[ =](?P<value>\S+)")
_TRIAL = re.compile(r"^Trial (\d+):\s+(.*)$")
_PAIR = re.compile(r"^(\w+)=([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)$")


def looks_like(text: str) -> bool:
    head = text[:20000]
    return "Timing with prompt_tokens=" in head or (bool(_COMMAND.search(head)) and "Averages: prompt_tps=" in head)


def _command(text: str) -> dict[str, str]:
    """What the last ``mlx_lm.benchmark`` command line in the text asks for: --model, -p, -g, -b."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if command := _COMMAND.search(line):
            found = {m["flag"].lstrip("-")[0]: m["value"] for m in _OPTION.finditer(command["args"])}
    return found


def _figures(text: str, line_no: int, source: str | Path) -> dict[str, float]:
    figures = {}
    for part in text.split(","):
        match = _PAIR.match(part.strip())
        if not match:
            raise fail(source, f"line {line_no}: {part.strip()!r} is not key=number (truncated?)")
        figures[match[1]] = number(float(match[2]), f"line {line_no}: {match[1]}", source, float("-inf"))
    for key in ("prompt_tps", "generation_tps"):
        if figures.get(key, 0) <= 0:
            raise fail(source, f"line {line_no}: no positive {key}")
    return figures


def read(path: Path, text: str, hardware: str | None = None) -> list[dict[str, Any]]:
    """One run per benchmark the text holds: a paste of several command lines, each with its output (a
    before/after, a batch sweep), gives a run for each."""
    chip_said: dict[str, Any] = {}  # the Mac the post's words name ("on my M2 Ultra"), where no --hardware was given
    if hardware is None and (chip := chip_named_in(text, "mlx", chip_said, "the text around the output")):
        hardware = chip[0].name
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if _COMMAND.search(line)]
    if len(starts) < 2:
        return _read_one(path, text, text, hardware, chip_said=chip_said)
    runs: list[dict[str, Any]] = []
    for start, end in zip(starts, [*starts[1:], len(lines)]):
        runs += _read_one(path, "".join(lines[start:end]), text, hardware, f"command {len(runs) + 1} of {len(starts)}",
                          chip_said)
    return runs


def _read_one(path: Path, text: str, whole: str, hardware: str | None, part: str | None = None,
              chip_said: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    header, averages = None, None
    trials: list[dict[str, float]] = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if match := _HEADER.match(line):
            header = tuple(int(v) for v in match.groups())
        elif match := _TRIAL.match(line):
            if int(match[1]) != len(trials) + 1:
                raise fail(path, f"line {line_no}: trial {match[1]} out of order")
            trials.append(_figures(match[2], line_no, path))
        elif line.startswith("Averages:"):
            averages = _figures(line.removeprefix("Averages:"), line_no, path)
    said = _command(text)
    if header is None and {"p", "g"} <= set(said) and all(said[k].isdigit() for k in "pgb" if k in said):
        header = (int(said["p"]), int(said["g"]), int(said.get("b", 1)))  # the command line's own lengths
    if header is None:
        raise fail(path, "no 'Timing with prompt_tokens=...' line, nor a command line with -p and -g: not "
                         "mlx_lm.benchmark output")
    if averages is None:
        raise fail(path, "no closing 'Averages:' line (truncated?)")
    header = (header[0], header[1], header[2] or 1)
    only_averages = not trials
    trials = trials or [averages]
    n_prompt, n_gen, batch = header
    try:
        spec = TestSpec(n_prompt, n_gen, batch=batch)
    except Exception as exc:
        raise fail(path, str(exc)) from None
    samples = []
    for figures in trials:
        prompt_ns = n_prompt * batch / figures["prompt_tps"] * 1e9
        gen_ns = n_gen * batch / figures["generation_tps"] * 1e9
        samples.append(sample(prompt_ns + gen_ns, n_prompt * batch, n_gen * batch, prompt_ns, gen_ns, figures))
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(microsecond=0).isoformat()
    test = make_test(0, spec, samples, {"averages": averages, "timing": "derived from mlx-lm's own rates"}, when,
                     warmup=1)
    model = described_model("?", "unknown (not named by mlx_lm.benchmark)", "hf")
    facts: dict[str, Any] = {"created_at": "the file's modification time", **(chip_said or {})}
    if said.get("m"):  # provenance, not the model: a run's id stays what it was before pdx read the command
        facts["model_named"] = {"name": said["m"], "read_from": "the mlx_lm.benchmark command line (--model)"}
    if only_averages:
        facts["figures"] = "the 'Averages:' line only (the paste kept no trials): one sample of the means"
    return [imported_run(ORIGIN, "mlx", {"name": "MLX"}, model, described_hardware(chip=hardware), [test],
                         file_facts(path, whole, "mlx_lm.benchmark") | facts | ({"block": part} if part else {}),
                         created_at=when, repetitions=len(trials), warmup=1)]
