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
from datetime import datetime, timezone
from pathlib import Path

from pdx.registry.bundle import fail
from pdx.registry.importers.common import described_hardware, described_model, file_facts, imported_run
from pdx.registry.importers.common import make_test, number, sample
from pdx.domain.workload import TestSpec

ORIGIN = "mlx_lm.benchmark"
_HEADER = re.compile(r"^Timing with prompt_tokens=(\d+), generation_tokens=(\d+), batch_size=(\d+)\.\s*$")
_TRIAL = re.compile(r"^Trial (\d+):\s+(.*)$")
_PAIR = re.compile(r"^(\w+)=([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)$")


def looks_like(text: str) -> bool:
    return "Timing with prompt_tokens=" in text[:20000]


def _figures(text: str, line_no: int, source) -> dict[str, float]:
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


def read(path: Path, text: str, hardware: str | None = None) -> list[dict]:
    header, trials, averages = None, [], None
    for line_no, line in enumerate(text.splitlines(), 1):
        if match := _HEADER.match(line):
            header = tuple(int(v) for v in match.groups())
        elif match := _TRIAL.match(line):
            if int(match[1]) != len(trials) + 1:
                raise fail(path, f"line {line_no}: trial {match[1]} out of order")
            trials.append(_figures(match[2], line_no, path))
        elif line.startswith("Averages:"):
            averages = _figures(line.removeprefix("Averages:"), line_no, path)
    if header is None:
        raise fail(path, "no 'Timing with prompt_tokens=...' line: not mlx_lm.benchmark output")
    if not trials or averages is None:
        raise fail(path, "no trials or no closing 'Averages:' line (truncated?)")
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
    return [imported_run(ORIGIN, "mlx", {"name": "MLX"}, model, described_hardware(chip=hardware), [test],
                         file_facts(path, text, "mlx_lm.benchmark") | {"created_at": "the file's modification time"},
                         created_at=when, repetitions=len(trials), warmup=1)]
