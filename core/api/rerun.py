"""``pdx rerun``: repeat a stored run with exactly its configuration.

The stored run names everything that shapes a measurement: backend, engine
options, threads, workload (tests, repetitions, warm-up, seed, adaptive
target) and the model by content hash. The new run is linked to the old one
through ``parent_id``. Before anything is stored, the model's hash and the
engine's version, commit and resolved settings are compared with the old
run's: any difference ("drift") refuses the rerun, or with ``allow_drift``
is recorded in the new run's provenance.

A stored run is data, never instructions. Whoever could write one (``pdx
import`` of a bundle, a pull, a shared registry, a hand edit) could name
anything in it, and its ``origin`` and ``provenance`` say only what the file
said: nothing marks a run as measured here that a file cannot forge. So a
rerun takes no option from the record that names a program, a path, a command
line, code or a server (:func:`unsafe_reason`): pdx finds the engine by its
own settings (``PDX_LLAMA_BENCH``, PATH, its own build), and what only the
user can name they give again with ``-o``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from pdx.api import BenchConfig
from pdx.contract.backend import EngineInfo
from pdx.contract.errors import PdxError
from pdx.domain.models import ModelInfo
from pdx.domain.serving.workloads import stored_workload


def find_drift(run: Mapping[str, Any], model: ModelInfo, engine: EngineInfo) -> dict[str, dict]:
    """What differs from the stored run: {field: {"was": ..., "now": ...}}."""
    pairs = {
        "model.sha256": (run["model"]["sha256"], model.sha256),
        "engine.name": (run["engine"]["name"], engine.engine),
        "engine.version": (run["engine"]["version"], engine.version),
        "engine.commit": (run["engine"]["commit"], engine.commit),
    }
    was, now = run["engine"]["settings"], engine.settings
    for key in sorted(set(was) | set(now)):
        pairs[f"engine.settings.{key}"] = (was.get(key), now.get(key))
    return {k: {"was": a, "now": b} for k, (a, b) in pairs.items() if a != b}


def describe(drift: dict[str, dict]) -> str:
    def short(value):
        return value[:12] if isinstance(value, str) and len(value) == 64 else value

    return ", ".join(f"{k} was {short(v['was'])!s}, now {short(v['now'])!s}" for k, v in drift.items())


# Options that only say where a program is: left out of a rerun (pdx's own settings find the program).
LOCATORS = {"llama_bench": "names a program to run"}
# Options that are a command line or a place to connect to: a rerun needs the user's own.
COMMANDS = {"server_args": "is a command line for the server pdx starts",
            "url": "names a server to send requests to"}
# Options that are a JSON object of other options (vllm.LLM's keyword arguments, the in-process engine's
# options): kept only when every entry is a plain setting, since an entry can name code (worker_cls,
# trust_remote_code) or a program (llama_bench).
OBJECTS = ("engine_args", "in_process_options")
# Text sent as it is (a served model's name, "org/model"): no program, path or command.
FREE_TEXT = ("model_name",)
# Words of another backend's option name that say it names a program, a path, code or a place.
PROGRAM_WORDS = {"bin", "binary", "exe", "executable", "exec", "program", "launcher", "wrapper", "shell",
                 "script", "command", "cmd", "args", "argv", "path", "dir", "directory", "file", "filename",
                 "lib", "library", "plugin", "plugins", "module", "cls", "class", "hook", "server", "url", "uri",
                 "host", "endpoint"}
# A number, a word, a list of them ("0.9", "q8_0", "auto", "1,2", "-1"), never a flag ("--load-plugin").
_PLAIN = re.compile(r"(?!-[^\d.])[\w.,+-]{0,256}")
_PLAIN_ENTRY = re.compile(r"(?!-[^\d.])[\w+-]{0,128}")  # in an object no dots either: "pkg.module.Class" is code


def _shown(key: object) -> str:
    """A name from a record as a message may print it: escaped unless plain printable text."""
    text = str(key)
    return text if text.isprintable() and len(text) <= 64 else ascii(text[:64])


def _unsafe_entry(key: str, value: object, in_object: bool) -> str | None:
    words = set(re.split(r"[^a-z0-9]+", str(key).lower()))
    if words & PROGRAM_WORDS:
        return "names a program, a path, code or a place to connect to"
    if "trust" in words or {"remote", "code"} <= words:
        return "lets a model's own code run"
    if value is None or isinstance(value, (bool, int, float)):
        return None
    if isinstance(value, str) and (_PLAIN_ENTRY if in_object else _PLAIN).fullmatch(value):
        return None
    return "holds more than a plain setting (a path, a command line or an object)"


def _unsafe_object(value: object) -> str | None:
    try:
        entries = json.loads(value) if isinstance(value, str) else value
    except (ValueError, RecursionError):
        return "is not JSON"
    if not isinstance(entries, dict):
        return "is not a JSON object"
    for key, entry in entries.items():
        why = unsafe_reason(str(key), entry, in_object=True)
        if why:
            return f"holds {_shown(key)}, which {why}"
    return None


def unsafe_reason(key: str, value: object, in_object: bool = False) -> str | None:
    """Why a stored option ``key=value`` could make pdx run, load or reach what the record chose
    (a phrase: "names a program to run"); None for a plain setting (a number, a word)."""
    if key in LOCATORS:
        return LOCATORS[key]
    if key in COMMANDS:
        return COMMANDS[key]
    if key in OBJECTS:
        return _unsafe_object(value)
    if key in FREE_TEXT and isinstance(value, str):
        return None
    return _unsafe_entry(key, value, in_object)


def rerun_options(run: Mapping[str, Any], given: dict[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
    """The options a rerun of ``run`` passes, and a note for each stored one it leaves out.

    The stored run's plain settings; none that names a program, a path, a command line, code or a
    server (:func:`unsafe_reason`): one that only locates a program is left out (pdx's own settings
    find it; the drift check then says if it is another build), any other refuses the rerun in one
    line. ``given`` (the user's ``-o``) may set only such options, and wins.
    """
    short = run["id"][:12]
    given = dict(given or {})
    stored = {str(k): str(v) for k, v in (run.get("options") or {}).items()}
    options, notes = {}, []
    for key, value in stored.items():
        if key in given:
            continue
        why = unsafe_reason(key, value)
        if why is None:
            options[key] = value
        elif key in LOCATORS:
            notes.append(f"run {short}: not using its option {key}: it {why}, and a rerun runs only what pdx's "
                         f"own settings name (give -o {key}=PATH to choose one)")
        else:
            raise PdxError(f"cannot rerun {short} from its record: its option {_shown(key)} {why}, and pdx never "
                           "runs or reaches what a stored run names",
                           f"give your own: pdx rerun {short} -o {_shown(key)}=...")
    for key in given:
        if key not in (*LOCATORS, *COMMANDS, *OBJECTS) and unsafe_reason(key, stored.get(key, "")) is None:
            allowed = ", ".join((*LOCATORS, *COMMANDS, *OBJECTS))
            raise PdxError(f"-o {_shown(key)}: a rerun repeats the stored run's settings; -o gives only what pdx "
                           f"does not take from a record ({allowed}, a program's path)",
                           "change a setting with a new `pdx bench`")
    return options | given, notes


def rerun_config(run: Mapping[str, Any], allow_drift: bool = False, model: str | None = None,
                 tags: list[str] | None = None, argv: list[str] | None = None,
                 options: dict[str, str] | None = None, notes: list[str] | None = None) -> BenchConfig:
    """The configuration that repeats ``run``; its ``verify`` enforces the drift policy. ``options``:
    the user's ``-o`` (see :func:`rerun_options`); ``notes``, when a list, receives what was left out."""
    if run.get("origin", "pdx") != "pdx":
        raise PdxError(f"run {run['id'][:12]} was imported from {run['origin']}; pdx reruns only runs it measured")
    chosen, left_out = rerun_options(run, options)
    if notes is not None:
        notes.extend(left_out)
    path = model or run["model"]["path"]
    if not Path(path).exists():
        raise PdxError(f"model {path} of run {run['id'][:12]} is gone",
                       "give its new location with --model (its hash must match)")

    def verify(found: ModelInfo, engine: EngineInfo) -> dict:
        drift = find_drift(run, found, engine)
        if drift and not allow_drift:
            raise PdxError(f"cannot rerun {run['id'][:12]} as it was: {describe(drift)}",
                           "pass --allow-drift to run anyway and record what changed")
        return {"rerun_of": run["id"], "drift": drift}

    return BenchConfig(
        backend=run["backend"],
        model=path,
        workload=stored_workload(run["workload"]),
        threads=run["threads"],
        options=chosen,
        tags=list(tags or []),
        argv=argv,
        parent_id=run["id"],
        verify=verify,
    )
