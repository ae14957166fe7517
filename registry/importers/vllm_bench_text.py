"""``vllm bench serve``'s printed result (and ``benchmark_serving.py``'s, which prints the same block):
the text people paste into issues, from ``==== Serving Benchmark Result ====`` to its closing ``====``.

Every ``Label: value`` line of a block is read into the key vLLM's ``--save-result`` JSON gives that
figure (``Successful requests`` is ``completed``, ``P99 TTFT (ms)`` is ``p99_ttft_ms``...), and the run
is then built by :func:`pdx.registry.importers.vllm_bench.run_record`, as the JSON's is: one serving
test whose figures are the block's own, stored as reported (a printed result keeps no requests).
Labels pdx does not know are skipped; a known label with a value that is not a number is a one-line
error naming its line, and so is a block without its closing line (a truncated paste).

The text before a block may say how vLLM was run, and is read where it does: the command line
(``vllm bench serve ...`` or ``python benchmark_serving.py ...``, continued over ``\\`` line ends), the
``Namespace(...)`` line vLLM prints, and its ``Traffic request rate:``, ``Burstiness factor:`` and
``Maximum request concurrency:`` lines. The block's own lines win over vLLM's lines before it, those
over the Namespace and that over the command line, whose values that are no numbers (``--max-concurrency
$N``) are passed over; vLLM's own lines must hold numbers. They give the model, the request rate,
burstiness and concurrency cap (vLLM's defaults where nothing says: every request at once, no cap), and
for the random dataset the prompt and output lengths asked for (else a test's lengths are the totals'
means, as for a JSON result without requests). A file may hold several blocks (a before/after
comparison): each is a run. A printed result has no date: the file's modification time is used.
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pdx.registry.bundle import fail
from pdx.registry.importers.common import chip_named_in, file_facts, integer, number
from pdx.registry.importers.vllm_bench import run_record

FORMAT = "vllm-bench-serve-text"
_TITLE = " Serving Benchmark Result "
_CLOSING = re.compile(r"^={10,}\s*$")
_LINE = re.compile(r"^(?P<label>[^:]*):\s*(?:(?P<value>\S+)(?:\s.*)?)?$")
_METRIC = re.compile(r"^(?:(?P<stat>mean|median)|p(?P<p>\d+(?:\.\d+)?)) (?P<name>.+) \(ms\)$")
_INT = re.compile(r"^[-+]?\d+$")
_FLOAT = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?(?:inf|nan)$", re.IGNORECASE)
# How many GPUs the model was split over, as the text before a block says it: vLLM's option, or a note ("TP2").
_TP = re.compile(r"(?:--tensor-parallel-size[ =]|(?<![\w-])-tp[ =]|\b(?:TP|tp)[ =]?)(?P<n>\d{1,2})\b")
_COMMAND = re.compile(r"(?:^|[\s/$])(?:vllm\s+bench\s+serve|benchmark_serving\.py)(?:\s|$)")

# Label (lower case) -> (vLLM's JSON key, kind): "int" a count printed as one, "whole" a count printed with
# decimals ("16.00"), "float" any figure.
_LABELS = {
    "successful requests": ("completed", "int"),
    "failed requests": ("failed", "int"),
    "maximum request concurrency": ("max_concurrency", "int"),
    "request rate configured (rps)": ("request_rate", "float"),
    "benchmark duration (s)": ("duration", "float"),
    "total input tokens": ("total_input_tokens", "int"),
    "total generated tokens": ("total_output_tokens", "int"),
    "request throughput (req/s)": ("request_throughput", "float"),
    "request goodput (req/s)": ("request_goodput", "float"),
    "input token throughput (tok/s)": ("input_throughput", "float"),
    "output token throughput (tok/s)": ("output_throughput", "float"),
    "peak output token throughput (tok/s)": ("max_output_tokens_per_s", "float"),
    "peak concurrent requests": ("max_concurrent_requests", "whole"),
    "total token throughput (tok/s)": ("total_token_throughput", "float"),
    "rtfx (inverse real-time factor)": ("rtfx", "float"),
    "input throughput (inputs/s)": ("input_sequence_throughput", "float"),
    "probe requests completed": ("probe_completed", "int"),
    "probe requests failed": ("probe_failed", "int"),
    "median probe e2el (ms)": ("probe_median_e2el_ms", "float"),
    "p99 probe e2el (ms)": ("probe_p99_e2el_ms", "float"),
    "max probe e2el (ms)": ("probe_max_e2el_ms", "float"),
    "acceptance rate (%)": ("spec_decode_acceptance_rate", "float"),
    "acceptance length": ("spec_decode_acceptance_length", "float"),
    "drafts": ("spec_decode_num_drafts", "int"),
    "draft tokens": ("spec_decode_draft_tokens", "int"),
    "accepted tokens": ("spec_decode_accepted_tokens", "int"),
    "committed throughput (tok/s)": ("diffusion_committed_throughput", "float"),
    "denoising steps per canvas": ("diffusion_steps_per_canvas", "float"),
    "committed per denoising step": ("diffusion_committed_per_step", "float"),
    "committed tokens": ("diffusion_committed_tokens", "int"),
    "denoising steps": ("diffusion_denoising_steps", "int"),
    "canvas positions evaluated": ("diffusion_canvas_positions", "int"),
}
# The latencies' names in "Mean TTFT (ms):" lines -> their JSON keys' middle.
_METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2el", "client queue time": "client_queue_time",
            "e2el incl. client queue": "e2el_including_client_queue"}
_REQUIRED = {"completed": "Successful requests", "duration": "Benchmark duration (s)",
             "total_input_tokens": "Total input tokens", "total_output_tokens": "Total generated tokens"}
# Command-line options (and the Namespace's names for them) -> the JSON's keys.
_OPTIONS = {"model": "model_id", "tokenizer": "tokenizer_id", "backend": "backend", "label": "label",
            "request_rate": "request_rate", "burstiness": "burstiness", "max_concurrency": "max_concurrency",
            "num_prompts": "num_prompts", "dataset_name": "dataset_name", "random_input_len": "random_input_len",
            "random_output_len": "random_output_len", "input_len": "random_input_len",
            "output_len": "random_output_len"}
_NAMESPACE_VALUE = re.compile(r"(?<![\w.])(" + "|".join(_OPTIONS) + r")=('[^']*'|\"[^\"]*\"|[^,()\s]+)")
_LOG_LINES = {"traffic request rate": "request_rate", "burstiness factor": "burstiness",
              "maximum request concurrency": "max_concurrency"}


def _header(line: str) -> str | None:
    """What comes before a block's ``==== Serving Benchmark Result ====`` line (a log's indent, a
    comment's ``#``), or None when the line is none."""
    at = line.find(_TITLE)
    if at < 0:
        return None
    before, after = line[:at], line[at + len(_TITLE):].strip()
    prefix = before.rstrip("=")
    return prefix if prefix != before and after and not after.strip("=") else None


def looks_like(text_: str) -> bool:
    """A vLLM result block: its header, and not SGLang's bench_serving (whose block names a Backend)."""
    at = text_.find(_TITLE)
    while at >= 0:
        start, end = text_.rfind("\n", 0, at) + 1, text_.find("\n", at)
        end = len(text_) if end < 0 else end
        following = text_[end:end + 400].lower()
        if _header(text_[start:end]) is not None and "backend:" not in following and "(retokenized)" not in following:
            return True
        at = text_.find(_TITLE, end)
    return False


def _strip(line: str, prefix: str) -> str:
    return (line[len(prefix):] if prefix and line.startswith(prefix) else line).strip()


def _value(token: str | None, kind: str, what: str, source: str | Path) -> int | float:
    """The number a known label's value is (checked as every imported figure is)."""
    if token is None:
        raise fail(source, f"{what} has no value (truncated?)")
    if len(token) > 40 or not (_INT if kind == "int" else _FLOAT).match(token):
        shown = repr(token) if len(token) <= 40 else repr(token[:37]) + "..."
        raise fail(source, f"{what} is {shown}, not {'a whole number' if kind == 'int' else 'a number'}")
    if kind == "int":
        return integer(int(token), what, source)
    figure = number(float(token), what, source)
    return int(figure) if kind == "whole" and figure == int(figure) else figure


def _percentile(word: str) -> str:
    """A percentile as vLLM's JSON keys name it: p99, p99.9."""
    p = float(word)
    return str(int(p)) if p == int(p) else str(p)


def _block(lines: list[str], start: int, prefix: str, source: str | Path) -> tuple[dict[str, Any], int]:
    """The keys of the block whose header is ``lines[start]``, and the index of its closing line."""
    document: dict[str, Any] = {}
    for i in range(start + 1, len(lines)):
        line = _strip(lines[i], prefix)
        if _CLOSING.match(line):
            missing = [label for key, label in _REQUIRED.items() if key not in document]
            if missing:
                raise fail(source, f"the result block at line {start + 1} has no {', '.join(missing)} line "
                                   "(not vllm bench serve's, or damaged)")
            return document, i
        if _header(lines[i]) is not None:
            break
        match = _LINE.match(line)
        if not match:
            continue  # section rules, blank and progress lines
        label = " ".join(match["label"].split()).lower()
        what = f"line {i + 1} ({' '.join(match['label'].split())})"
        if label in ("backend", "total generated tokens (retokenized)"):
            raise fail(source, f"line {i + 1}: this is SGLang's bench_serving result, not vllm bench serve's")
        if label in _LABELS:
            key, kind = _LABELS[label]
        elif (metric := _METRIC.match(label)) and metric["name"] in _METRICS:
            key = f"{metric['stat'] or 'p' + _percentile(metric['p'])}_{_METRICS[metric['name']]}_ms"
            kind = "float"
        else:
            continue  # a figure pdx does not know (a newer vLLM's), or a log line
        if key in document:
            raise fail(source, f"{what}: a second {match['label'].strip()!r} in the block at line {start + 1}")
        document[key] = _value(match["value"], kind, what, source)
    raise fail(source, f"the result block at line {start + 1} has no closing '=====' line (truncated?)")


def _command(lines: list[str]) -> dict[str, Any]:
    """What the last command line before a block asks for (options whose values are shell variables aside),
    and which script it runs (``_tool``)."""
    for end in range(len(lines) - 1, -1, -1):
        if not (tool := _COMMAND.search(lines[end])):
            continue
        joined, i = lines[end].rstrip(), end
        while joined.endswith("\\") and i + 1 < len(lines):
            i += 1
            joined = joined[:-1] + " " + lines[i].strip()
        try:
            words = shlex.split(joined)
        except ValueError:
            words = joined.split()
        found = {"_tool": "benchmark_serving.py" if "benchmark_serving" in tool[0] else "vllm bench serve"}
        for j, word in enumerate(words):
            if not word.startswith("--"):
                continue
            name, _, value = word[2:].partition("=")
            name = name.replace("-", "_")
            if not value and j + 1 < len(words) and not words[j + 1].startswith("--"):
                value = words[j + 1]
            if name in _OPTIONS and value and "$" not in value:
                found[name] = value
        return found
    return {}


def _namespace(lines: list[str]) -> dict[str, Any]:
    """The arguments of the last ``Namespace(...)`` line vLLM printed before a block."""
    for line in reversed(lines):
        if "Namespace(" in line:
            values: dict[str, Any] = {}
            for name, raw in _NAMESPACE_VALUE.findall(line[line.index("Namespace("):]):
                value = raw[1:-1] if raw[:1] in "'\"" else raw
                if value != "None":
                    values.setdefault(name, value)
            return values
    return {}


def _log_lines(lines: list[str], prefix: str) -> dict[str, Any]:
    """vLLM's ``Traffic request rate: inf`` lines before a block (the last of each)."""
    found = {}
    for line in lines:
        match = _LINE.match(_strip(line, prefix))
        if match and (key := _LOG_LINES.get(" ".join(match["label"].split()).lower())):
            found[key] = (match["value"] or "").rstrip(".")
    return found


def _settings(context: list[str], first_line: int, prefix: str,
              source: str | Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The run's settings from the text before its block, as JSON keys, and where each was read. vLLM's
    own lines must hold numbers where they should; a command line's odd values (``--max-concurrency <N>``)
    are passed over."""
    command = _command(context)
    tool = command.pop("_tool", None)
    document: dict[str, Any] = {}  # vLLM's result JSON's keys
    where: dict[str, str] = {}
    for origin, values, strict in (("command line", command, False), ("Namespace line", _namespace(context), False),
                                   ("log lines", _log_lines(context, prefix), True)):
        for name, raw in values.items():
            key = _OPTIONS.get(name, name)
            kind = "float" if key in ("request_rate", "burstiness") else "int"
            if key in ("model_id", "tokenizer_id", "backend", "label", "dataset_name"):
                if len(raw) > 1024:
                    continue
                value = raw
            elif key == "request_rate" and raw.lower() == "inf":
                value = "inf"
            elif key == "max_concurrency" and raw.lower() == "none":
                document.pop(key, None)
                where[key] = origin
                continue
            elif strict or (_INT if kind == "int" else _FLOAT).match(raw):
                value = _value(raw or None, kind, f"the {origin} before line {first_line} ({name})", source)
            else:
                continue
            document[key], where[key] = value, origin
    if tool == "vllm bench serve" and "dataset_name" not in document:
        document["dataset_name"], where["dataset_name"] = "random", "vllm bench serve's default"
    return document, where


def _asked_lengths(document: dict[str, Any]) -> tuple[int, int] | None:
    """The prompt and output lengths of vLLM's random dataset, where the text says both and that dataset."""
    if document.get("dataset_name") != "random":
        return None
    n_in, n_out = document.get("random_input_len"), document.get("random_output_len")
    return (n_in, n_out) if isinstance(n_in, int) and n_in > 0 and isinstance(n_out, int) and n_out > 0 else None


def read(path: Path, text_: str, hardware: str | None = None) -> list[dict[str, Any]]:
    lines = text_.splitlines()
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(microsecond=0).isoformat()
    blocks, after = [], 0
    for i, line in enumerate(lines):
        if i < after or (prefix := _header(line)) is None:
            continue
        settings, where = _settings(lines[after:i], i + 1, prefix, path)
        figures, closing = _block(lines, i, prefix, path)
        where |= {k: "result block" for k in ("request_rate", "max_concurrency") if k in figures}
        where.setdefault("request_rate", "not said: vLLM's default, inf (all at once)")
        where.setdefault("max_concurrency", "not said: vLLM's default, no cap")
        blocks.append((i, closing, settings | figures, where))
        after = closing + 1
    if not blocks:
        raise fail(path, "no '==== Serving Benchmark Result ====' block: not vllm bench serve's printed result")
    chip_said: dict[str, Any] = {}  # the GPU the post's words name, where no --hardware was given
    if hardware is None and (chip := chip_named_in(text_, "vllm", chip_said, "the text around the result")):
        hardware = chip[0].name
    runs: list[dict[str, Any]] = []
    for n, (first, last, document, where) in enumerate(blocks, 1):
        lengths = _asked_lengths(document)
        provenance = file_facts(path, text_, FORMAT) | {
            **chip_said, "block": f"{n} of {len(blocks)}", "lines": f"{first + 1}-{last + 1}",
            "created_at": "the file's modification time (a printed result has no date)",
            "read_from": where | ({"lengths": f"asked for (random dataset), {where['random_input_len']}"}
                                  if lengths else {"lengths": "the totals' means"})}
        said = [m for line in lines[:first] for m in _TP.finditer(line)]
        if said:  # provenance, not the run's settings: a run's id stays what it was before pdx read this
            provenance["tensor_parallel"] = {"size": int(said[-1]["n"]), "read_from": f"the text: {said[-1][0]!r}"}
        run = run_record(path, document, hardware, provenance, when=when, lengths=lengths)
        if all(run["id"] != r["id"] for r in runs):  # a paste that shows one result twice is one run
            runs.append(run)
    return runs
