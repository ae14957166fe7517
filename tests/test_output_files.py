"""Files named on the command line, as an attacker (or a slip of the keyboard) would name them: every
writer (`report -o`, `export -o`, `compare --html`, `submit -o`, `publish`, `model synth -o`) refuses a
character device, a named pipe and a name too long in one line and leaves the device or pipe as it
was; `pdx import` and `--trace` refuse a named pipe, a device and a socket before opening them, so
nothing blocks; `export -o -` onto a full device is one line."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_pdx, run_pdx_here
from runfactory import filled_registry

LONG = "a" * 300  # over every file system's 255-byte limit on one name


@pytest.fixture
def registry(tmp_path) -> str:
    return filled_registry(tmp_path, 2)


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.fixture
def device(tmp_path) -> Path:
    """A character device of our own (the null device's numbers), so a failing test clobbers no real one."""
    path = tmp_path / "null"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("making a device node needs root")
    return path


def _still(path: Path, test) -> None:
    assert test(os.lstat(path).st_mode), f"{path} was replaced by a regular file"


def _run_id(registry: str) -> str:
    from pdx.registry import Registry

    return Registry(registry).run_ids()[0]


@pytest.mark.parametrize("special", ["fifo", "device"])
def test_no_writer_replaces_a_device_or_a_pipe(special, registry, request):
    target = request.getfixturevalue(special)
    check = stat.S_ISFIFO if special == "fifo" else stat.S_ISCHR
    words = "named pipe" if special == "fifo" else "character device"
    run = _run_id(registry)
    for args in (["report", "-o", str(target)], ["export", "-o", str(target)],
                 ["compare", run, run, "--html", str(target)],
                 ["model", "synth", "--shape", "tiny", "-o", str(target)]):
        result = run_pdx_here(*args, "--registry", registry) if args[0] != "model" else run_pdx_here(*args)
        assert_one_line_error(result, f"cannot write {target}", words)
        _still(target, check)
    for args, verb in ((["submit", run, "--force", "-o", str(target)], "cannot submit into"),
                       (["publish", str(target)], "cannot publish into")):
        assert_one_line_error(run_pdx_here(*args, "--registry", registry), f"{verb} {target}", words)
        _still(target, check)


def test_a_regular_file_is_still_replaced_whole(registry, tmp_path):
    target = tmp_path / "runs.pdx.json"
    target.write_text("old")
    run_pdx_here("export", "-o", str(target), "--registry", registry)
    assert '"pdx-bundle"' in target.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".pdx-")] == []  # no temporary file left


def test_a_name_too_long_is_one_line(registry, tmp_path):
    long = tmp_path / LONG
    run = _run_id(registry)
    for args in (["report", "-o", f"{long}.html"], ["export", "-o", f"{long}.json"],
                 ["compare", run, run, "--html", f"{long}.html"], ["publish", str(long)],
                 ["submit", run, "--force", "-o", str(long)]):
        assert_one_line_error(run_pdx_here(*args, "--registry", registry), "File name too long", "shorter")
    assert_one_line_error(run_pdx_here("model", "synth", "--shape", "tiny", "-o", f"{long}.gguf"), "too long")
    assert_one_line_error(run_pdx_here("model", "synth", "--shape", "tiny", "--format", "hf", "-o", str(long)),
                          "too long")
    assert list(tmp_path.glob("a*")) == []


def _unix_socket(tmp_path: Path) -> tuple[socket.socket, Path]:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    return server, path


def test_import_refuses_a_pipe_a_device_and_a_socket_without_opening_them(registry, fifo, tmp_path):
    """In a fresh process, bounded: opening the pipe to read would wait for a writer for ever."""
    server, sock = _unix_socket(tmp_path)
    specials = [(fifo, "named pipe (FIFO)"), (sock, "socket")]
    try:
        node = tmp_path / "null"
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        specials.append((node, "character device"))
    except (PermissionError, AttributeError):
        pass
    try:
        for path, words in specials:
            result = run_pdx("import", str(path), "--registry", registry, timeout=60)
            assert_one_line_error(result, f"cannot import {path}", words, "regular file")
    finally:
        server.close()
    _still(fifo, stat.S_ISFIFO)


def test_a_trace_that_is_a_pipe_is_refused_without_waiting(fifo, tmp_path):
    result = run_pdx("serve-bench", "--backend", "openai", "--url", "http://127.0.0.1:9", "--trace", str(fifo),
                     "--registry", str(tmp_path / "r.sqlite"), timeout=60)
    assert_one_line_error(result, "--trace", "named pipe")


def test_a_site_file_swapped_for_a_pipe_stops_publish_in_one_line(registry, tmp_path):
    """A page the last build wrote, now a named pipe: publish must not read it (it would wait), nor replace it."""
    site = tmp_path / "site"
    assert run_pdx("publish", str(site), "--registry", registry, timeout=300).returncode == 0
    page = site / "index.html"
    page.unlink()
    os.mkfifo(page)
    result = run_pdx("publish", str(site), "--registry", registry, timeout=300)
    assert_one_line_error(result, "index.html is there and pdx did not write it")
    _still(page, stat.S_ISFIFO)


def _to_full_output(*args: str) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "pdx", *args], stdout=full, stderr=subprocess.PIPE, text=True,
                                timeout=120)
    result.stdout = ""
    return result


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_export_to_a_full_standard_output_is_one_line(registry):
    assert_one_line_error(_to_full_output("export", "-o", "-", "--registry", registry),
                          "cannot write to standard output", "No space left")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("args", [("runs",), ("runs", "--json"), ("show", "latest")])
def test_tables_and_json_onto_a_full_standard_output_are_one_line(registry, args):
    if args[0] == "show":
        (run,) = json.loads(run_pdx("runs", "--json", "--registry", registry).stdout)[:1]
        args = ("show", run["id"])
    assert_one_line_error(_to_full_output(*args, "--registry", registry), "cannot write the output", "No space left")
