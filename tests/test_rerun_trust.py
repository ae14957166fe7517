"""`pdx rerun` never runs what a stored run names (issue 27).

A bundle that claims ``origin: pdx`` (as a run measured here would) names a
planted script in its options: the program llama-bench is looked for at, a
server's flags, the in-process engine's options, vLLM's engine arguments, a
URL. Each is imported as a stranger's file would be and rerun through the
real CLI; the script writes a marker file if it ever runs, and it never does.
"""

import json
import random
import stat
from datetime import datetime, timezone

import pytest

from pdx.contract.errors import PdxError
from pdx.domain.models import identify
from pdx.registry import Registry
from pdx.registry.bundle import digest
from pdx.api.rerun import rerun_options, unsafe_reason
from pdx.domain.workload import TestSpec

from conftest import assert_one_line_error, pdx_import, run_pdx, run_pdx_here, show
from runfactory import add_run, hardware, model


@pytest.fixture
def planted(tmp_path):
    """A script that writes a marker file when run (as a program, or as Python), and that marker."""
    marker = tmp_path / "MARKER"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho 'version: 1 (abc)'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    return script, marker


def hostile_bundle(tmp_path, gguf, backend: str, options: dict) -> str:
    """A bundle file of one run that looks measured by pdx (origin pdx, empty provenance) on the tiny
    model, with ``options`` stored; its digest is right, so the bundle reader accepts it."""
    scratch = Registry(f"sqlite:///{tmp_path / 'maker.sqlite'}")
    run_id = add_run(scratch, hardware("AMD EPYC 9654", 0), model("m", 0), backend,
                     datetime(2026, 1, 2, tzinfo=timezone.utc), random.Random(1), tests=[TestSpec(16, 0)],
                     repetitions=1, threads=1, options=options)
    (record,) = scratch.records([run_id])
    scratch.close()
    info = identify(str(gguf)).to_dict()
    record["model"] = info | {"id": info["sha256"]}
    assert record["origin"] == "pdx" and record["provenance"] == {}
    path = tmp_path / "hostile.pdx.json"
    path.write_text(json.dumps({"format": "pdx-bundle", "schema_version": 1, "pdx_version": "0.1.0",
                                "exported_at": "2026-01-02T00:00:00+00:00", "redacted": False,
                                "runs": [{"sha256": digest(record), "record": record}]}))
    return str(path)


def imported(registry_url, tmp_path, gguf, backend, options) -> str:
    (run_id,) = pdx_import(registry_url, hostile_bundle(tmp_path, gguf, backend, options))["added"]
    assert show(registry_url, run_id)["options"] == options  # stored as the file said: refused at rerun
    return run_id


@pytest.mark.parametrize("backend", ["llamacpp-bench", "llamacpp"])
def test_a_planted_llama_bench_never_runs(registry_url, tmp_path, tiny_gguf, planted, backend):
    """The program's path is left out, with one line saying so and why; pdx's own llama-bench (if
    this machine has one) then loads the model, and the drift check refuses a run that differs (or
    the backend is unavailable): either way the planted script did not run."""
    script, marker = planted
    run_id = imported(registry_url, tmp_path, tiny_gguf, backend, {"llama_bench": str(script)})
    result = run_pdx("rerun", run_id, "--registry", registry_url, timeout=300)
    assert not marker.exists()
    notes = [line for line in result.stderr.splitlines() if "llama_bench" in line]
    assert len(notes) == 1 and "not using its option llama_bench: it names a program to run" in notes[0], \
        result.stderr
    assert str(script) not in result.stderr + result.stdout
    assert result.returncode != 0 and "Traceback" not in result.stderr  # it differs from pdx's own llama-bench


@pytest.mark.llamacpp
def test_a_rerun_without_the_planted_program_runs_pdx_own_llama_bench(registry_url, tmp_path, tiny_gguf, planted):
    script, marker = planted
    run_id = imported(registry_url, tmp_path, tiny_gguf, "llamacpp-bench", {"llama_bench": str(script)})
    result = run_pdx("rerun", run_id, "--allow-drift", "--registry", registry_url, "--json", timeout=300)
    assert result.returncode == 0, result.stderr
    assert not marker.exists() and "not using its option llama_bench" in result.stderr
    rerun = json.loads(result.stdout)
    assert rerun["parent_id"] == run_id and rerun["status"] == "complete" and "llama_bench" not in rerun["options"]
    assert [t["name"] for t in rerun["tests"]] == ["pp16"]


HOSTILE_OPTIONS = {
    "server_args": ("llamacpp-server", lambda d: {"server_args": f"--tool-parser-plugin {d / 'evil.py'}"},
                    "its option server_args is a command line for the server pdx starts"),
    "in_process_options": ("llamacpp-server",
                           lambda d: {"in_process_options": json.dumps({"llama_bench": str(d / "evil.sh")})},
                           "its option in_process_options holds llama_bench, which names a program to run"),
    "engine_args": ("vllm", lambda d: {"engine_args": json.dumps({"worker_extension_cls": "evil.Extension"})},
                    "its option engine_args holds worker_extension_cls, which names a program, a path, code"),
    "trust_remote_code": ("vllm", lambda d: {"engine_args": json.dumps({"trust_remote_code": True})},
                          "holds trust_remote_code, which lets a model's own code run"),
    "url": ("openai", lambda d: {"url": "http://attacker.invalid:8000"}, "its option url names a server"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_OPTIONS))
def test_a_stored_command_line_code_or_server_refuses_the_rerun_in_one_line(registry_url, tmp_path, tiny_gguf,
                                                                          planted, case):
    backend, make, needle = HOSTILE_OPTIONS[case]
    _, marker = planted
    run_id = imported(registry_url, tmp_path, tiny_gguf, backend, make(tmp_path))
    line = assert_one_line_error(run_pdx_here("rerun", run_id, "--registry", registry_url),
                                 f"cannot rerun {run_id[:12]} from its record", needle, "-o ")
    assert "evil" not in line and "attacker" not in line  # what was refused is named, not what it held
    assert not marker.exists()


def test_only_what_a_record_cannot_choose_is_given_with_o(registry_url, tmp_path, tiny_gguf, planted):
    run_id = imported(registry_url, tmp_path, tiny_gguf, "llamacpp-bench", {"llama_bench": str(planted[0])})
    assert_one_line_error(run_pdx_here("rerun", run_id, "-o", "n_batch=64", "--registry", registry_url),
                          "-o n_batch", "a rerun repeats the stored run's settings")
    assert_one_line_error(run_pdx_here("rerun", run_id, "-o", "n_batch", "--registry", registry_url), "KEY=VALUE")
    assert not planted[1].exists()


def run(options: dict) -> dict:
    return {"id": "ab" * 16, "options": options}


def test_plain_settings_are_kept_and_the_user_gives_the_rest():
    plain = {"n_batch": "512", "flash_attn": "on", "type_k": "q8_0", "n_gpu_layers": "-1", "repack": "0",
             "model_name": "meta-llama/Llama-3.1-8B", "port": "8081", "startup_timeout": "120.5",
             "engine_args": json.dumps({"enforce_eager": True, "max_model_len": 4096, "dtype": "bfloat16"})}
    assert rerun_options(run(plain)) == (plain, [])
    options, notes = rerun_options(run({"llama_bench": "/x/llama-bench", "n_batch": "64"}),
                                   {"llama_bench": "/mine/llama-bench"})
    assert options == {"n_batch": "64", "llama_bench": "/mine/llama-bench"} and notes == []
    options, _ = rerun_options(run({"server_args": "--evil", "port": "9"}), {"server_args": "-c 4096"})
    assert options == {"server_args": "-c 4096", "port": "9"}
    with pytest.raises(PdxError, match="server_args"):
        rerun_options(run({"server_args": "-c 4096"}))


@pytest.mark.parametrize("key, value", [
    ("launcher", "x"), ("engine_binary", "llama"), ("hook_script", "a"), ("extra", "--load-plugin=x"),
    ("extra", "/tmp/evil.sh"), ("extra", "a b"), ("extra", "~/x"), ("extra", "C:\\x"), ("extra", "$(id)"),
    ("extra", "`id`"), ("extra", "{}"), ("in_process_options", "not json"), ("in_process_options", "[1]"),
    ("engine_args", json.dumps({"distributed_executor_backend": "evil.Executor"})),
    ("engine_args", json.dumps({"hf_overrides": {"a": 1}})),
    ("engine_args", json.dumps({"download_dir": "/tmp"})),
    ("engine_args", "[" * 100_000),
])
def test_what_could_name_a_program_is_never_taken_from_a_record(key, value):
    assert unsafe_reason(key, value)
    with pytest.raises(PdxError, match=f"cannot rerun abababababab from its record: its option {key} "):
        rerun_options(run({key: value}))


def test_a_hostile_option_name_is_printed_escaped():
    with pytest.raises(PdxError) as caught:
        rerun_options(run({"\x1b]0;pwned\x07bin": "x"}))
    assert "\x1b" not in str(caught.value) and "\\x1b" in str(caught.value)
