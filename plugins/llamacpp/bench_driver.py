"""``llamacpp-bench``: run llama-bench, one process per test, and keep its
per-repetition samples and build identity."""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, Mapping

from pdx.contract.backend import Availability, Backend, BackendConfig, EngineInfo, Sample
from pdx.contract.errors import PdxError
from pdx.domain.models import ModelInfo
from pdx.plugins.llamacpp.build import built_from, runs, tool_version, version_label
from pdx.plugins.llamacpp.locate import INSTALL_HINT, find_llama_bench
from pdx.plugins.llamacpp.settings import OPTIONS, parse_settings
from pdx.contract import build
from pdx.domain.workload import TestSpec

# Fields of llama-bench's record not kept as the test's: its samples (each is a Sample, its samples_ts
# the Sample's engine "ts") and its summary of one call's repetitions, extra warm-ups pdx drops
# included. An adaptive test is several calls: its figures are derived from all its stored samples,
# in one place (pdx.reports.results), so no stored mean can disagree with them.
_DROP = {"samples_ns", "samples_ts", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts"}


def _read_result(proc: subprocess.Popen) -> tuple[str, int | None]:
    """llama-bench's output, and when (monotonic ns) its result line arrived: it prints a test's
    line as the test's last repetition ends, which is where the repetitions' windows are laid from."""
    lines: list[str] = []
    printed: int | None = None
    if proc.stdout is None:
        raise ValueError("llama-bench's output is read from a pipe (stdout=PIPE)")
    for line in proc.stdout:
        if printed is None and line.startswith("{"):
            printed = time.monotonic_ns()
        lines.append(line)
    proc.wait()
    return "".join(lines), printed


def _ends(printed_ns: int | None, times: list[int]) -> list[int | None]:
    """Each repetition's end, laid back to back before the result line (llama-bench runs them one
    after another; at a depth it also fills the context, untimed, before each, so laid back to back
    the windows take in some of those fills, which draw as a prefill does)."""
    if printed_ns is None:
        return [None] * len(times)
    ends: list[int | None] = []
    end = printed_ns
    for ns in reversed(times):
        ends.append(end)
        end -= ns
    return ends[::-1]


def _explain(returncode: int, stderr: str) -> str:
    tail = [line for line in stderr.strip().splitlines() if line.strip()][-1:] or [""]
    if returncode < 0:
        name = signal.Signals(-returncode).name
        hint = ""
        if name == "SIGILL":
            hint = ("; on CPUs with AMX, quantised models need llama.cpp built with -mno-amx-int8 "
                    "(`pdx llamacpp install` does) or -o repack=0")
        return f"llama-bench died with {name}{hint}"
    return f"llama-bench exited with {returncode}: {tail[0].strip()}"


class LlamaBench(Backend):
    name = "llamacpp-bench"
    engine = "llama.cpp"
    summary = "its own llama-bench binary (one sequence)"
    model_formats = ("gguf",)
    options = OPTIONS | {"llama_bench": "path of the llama-bench binary (default: PATH, then `pdx llamacpp install`'s)"}

    @classmethod
    def availability(cls, options: Mapping[str, str] | None = None) -> Availability:
        try:
            binary = find_llama_bench((options or {}).get("llama_bench"))
        except PdxError as exc:
            return Availability(False, str(exc.message), INSTALL_HINT)
        if binary is None:
            return Availability(False, "no llama-bench binary found (PATH, PDX_LLAMA_BENCH or a pdx build)",
                                INSTALL_HINT)
        label = version_label(binary)
        if label is None:
            if runs(binary):  # older than llama-bench's --version: its runs keep what pdx built it from
                return Availability(True, version="unknown (its llama-bench has no --version)")
            return Availability(False, f"{binary} does not run (`--version` failed)", INSTALL_HINT)
        return Availability(True, version=label)

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        self.settings = parse_settings(config, self.option_values)
        self.binary: Path | None = None
        self.model: ModelInfo | None = None
        self._info: dict = {}

    def load(self, model: ModelInfo) -> EngineInfo:
        self.binary = find_llama_bench(self.config.options.get("llama_bench"))
        if self.binary is None:
            raise PdxError("no llama-bench binary found", INSTALL_HINT)
        commit, number = tool_version(self.binary)
        self.model = model
        return EngineInfo(
            engine=self.engine,
            version=f"b{number}" if number is not None else None,
            commit=commit,
            settings=self.settings.to_dict() | {"mode": "llama-bench"},
            # llama-bench takes no token ids: it draws its own (speed does not depend on them).
            details={"llama_bench": str(self.binary), "prompts": "llama-bench's own",
                     **({"built_from": origin} if (origin := built_from(self.binary)) else {})},
        )

    def unsupported(self, test: build.Shape) -> str | None:
        if test.batch > 1:
            return "llama-bench runs one sequence; use --backend llamacpp-python for batched (/b) tests"
        return None

    def command(self, test: TestSpec, repetitions: int, warmup: int) -> list[str]:
        s = self.settings
        # llama-bench has one built-in warm-up; further ones are extra repetitions dropped here.
        reps = repetitions + max(0, warmup - 1)
        if self.model is None:
            raise PdxError(f"{self.name}: load() must come before run()")
        cmd = [
            str(self.binary), "-m", self.model.path, "-o", "jsonl", "-r", str(reps),
            "-t", str(s.threads), "-b", str(s.n_batch), "-ub", str(s.n_ubatch), "-fa", s.flash_attn,
            "-ngl", str(s.n_gpu_layers), "-ctk", s.type_k, "-ctv", s.type_v, "-d", str(test.depth),
        ]
        if not s.repack:  # only when asked: llama-bench repacks by default, and builds before --repack refuse it
            cmd += ["--repack", "0"]
        if s.n_cpu_moe:  # only when asked: builds older than llama-bench's -ncmoe still run everything else
            cmd += ["-ncmoe", str(s.n_cpu_moe)]
        if test.kind == "pg":
            cmd += ["-p", "0", "-n", "0", "-pg", f"{test.n_prompt},{test.n_gen}"]
        else:
            cmd += ["-p", str(test.n_prompt), "-n", str(test.n_gen)]
        if warmup == 0:
            cmd.append("--no-warmup")
        return cmd

    def run(self, test: TestSpec, repetitions: int, warmup: int) -> Iterator[Sample]:
        cmd = self.command(test, repetitions, warmup)
        self._info = {}
        with tempfile.TemporaryFile("w+") as stderr:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
            try:
                out, printed_ns = _read_result(proc)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            stderr.seek(0)
            errors = stderr.read()
        if proc.returncode != 0:
            raise PdxError(_explain(proc.returncode, errors))
        records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        if len(records) != 1:
            raise PdxError(f"llama-bench printed {len(records)} results for one test; expected 1")
        record = records[0]
        self._info = {k: v for k, v in record.items() if k not in _DROP} | {"command": cmd}
        skip = max(0, warmup - 1)
        timed = list(zip(record["samples_ns"], record["samples_ts"]))[skip:]
        for (ns, ts), ended in zip(timed, _ends(printed_ns, [int(ns) for ns, _ in timed])):
            yield Sample(ns=int(ns), n_prompt=test.n_prompt, n_gen=test.n_gen, engine={"ts": float(ts)},
                         ended_ns=ended)

    def test_info(self) -> dict:
        return self._info
