"""A registry from a newer pdx, or one altered by hand: one line naming the problem and what to do,
never a traceback; a run whose rows do not read is left out of listings and reports, and said so,
while the others still read."""

from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import assert_one_line_error, run_pdx_here
from runfactory import fill


@pytest.fixture
def damaged(tmp_path):
    """(registry path, [the run to damage, the run left alone]): two runs, stored as pdx bench stores them."""
    from pdx.registry import Registry

    path = tmp_path / "registry.sqlite"
    store = Registry(str(path))
    ids = fill(store, 2, n_hardware=1, n_models=1)
    store.close()
    return path, ids


def _alter(path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        for statement in statements:
            conn.execute(statement)


def _content(path) -> tuple:
    with sqlite3.connect(path) as conn:
        tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        version = conn.execute("SELECT version_num FROM alembic_version").fetchall() \
            if "alembic_version" in tables else None
        return tables, version, conn.execute("SELECT COUNT(*) FROM runs").fetchone()


@pytest.mark.parametrize("statements, needles", [
    (["UPDATE alembic_version SET version_num = 'ffee12345678'"], ["'ffee12345678'", "newer pdx", "upgrade"]),
    (["DROP TABLE samples"], ["table samples is missing", "restore it from a copy"]),
    (["DROP TABLE run_tags", "DROP TABLE requests"], ["tables requests, run_tags are missing", "restore"]),
    (["DROP TABLE alembic_version"], ["no schema revision", "restore"]),
])
def test_a_newer_or_broken_registry_is_one_line_and_left_as_it_was(damaged, statements, needles):
    path, ids = damaged
    _alter(path, *statements)
    before = _content(path)
    for args in (["runs"], ["show", ids[0]], ["report", "-o", str(path.with_name("r.html"))],
                 ["export", "-o", str(path.with_name("e.json"))]):
        assert_one_line_error(run_pdx_here(*args, "--registry", str(path)), str(path), *needles)
    assert _content(path) == before  # nothing migrated, stamped or created
    assert not list(path.parent.glob("*.bak")) and not path.with_name("r.html").exists()


@pytest.mark.parametrize("statement, reason", [
    ("UPDATE runs SET created_at = 'garbage' WHERE id = '{run}'", "a date in its rows does not parse"),
    ("UPDATE runs SET options = '{{broken' WHERE id = '{run}'", "a JSON value in its rows does not parse"),
    ("UPDATE runs SET workload = '[1, 2]' WHERE id = '{run}'", "run.workload: list where an object belongs"),
    ("UPDATE samples SET ns = -5 WHERE id = (SELECT MIN(s.id) FROM samples s JOIN tests t ON t.id = s.test_id "
     "WHERE t.run_id = '{run}')", "tests[0].samples[0].ns: -5 is not a whole number of at least 1"),
    ("UPDATE samples SET ns = 'soon' WHERE test_id IN (SELECT id FROM tests WHERE run_id = '{run}')",
     "samples[0].ns: 'soon' is not a whole number"),
    ("UPDATE tests SET batch = 0 WHERE run_id = '{run}'", "tests[0].batch: 0 is not a whole number of at least 1"),
    ("UPDATE runs SET model_id = 'gone' WHERE id = '{run}'", "a row it refers to"),
])
def test_a_run_that_does_not_read_is_reported_and_the_others_still_read(damaged, statement, reason):
    path, (bad, good) = damaged
    _alter(path, statement.format(run=bad))
    registry = str(path)

    listed = run_pdx_here("runs", "--json", "--registry", registry)
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == [good]
    warning, = [line for line in listed.stderr.splitlines() if line.strip()]
    assert warning.startswith("pdx: warning: 1 run in") and "could not be read" in warning
    assert bad[:12] in warning and reason in warning and "restore" in warning

    assert_one_line_error(run_pdx_here("show", bad, "--registry", registry), f"cannot read run {bad}", reason,
                          "altered or damaged")
    assert run_pdx_here("show", good, "--registry", registry).returncode == 0

    report = path.with_name("report.html")
    made = run_pdx_here("report", "-o", str(report), "--registry", registry)
    assert made.returncode == 0 and "(1 run)" in made.stdout and "could not be read" in made.stderr
    assert good in report.read_text() and bad not in report.read_text()

    assert_one_line_error(run_pdx_here("export", "-o", str(path.with_name("all.json")), "--registry", registry),
                          bad, reason, "nothing was copied")
    assert run_pdx_here("export", good, "-o", str(path.with_name("good.json")), "--registry", registry).returncode == 0


def test_every_run_unreadable_is_said_so_not_no_runs(damaged):
    path, _ = damaged
    _alter(path, "UPDATE hardware SET details = '{x'")
    assert_one_line_error(run_pdx_here("report", "-o", str(path.with_name("r.html")), "--registry", str(path)),
                          "2 could not be read", "restore it from a copy")
    listed = run_pdx_here("runs", "--registry", str(path))
    assert listed.returncode == 0 and "2 runs in" in listed.stderr and "could not be read" in listed.stderr


@pytest.mark.parametrize("special", ["fifo", "device"])
def test_a_registry_path_that_is_a_pipe_or_a_device_is_refused(special, tmp_path):
    import os
    import stat

    path = tmp_path / special
    if special == "fifo":
        os.mkfifo(path)
    else:
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except (PermissionError, AttributeError):
            pytest.skip("making a device node needs root")
    words = "named pipe" if special == "fifo" else "character device"
    assert_one_line_error(run_pdx_here("runs", "--registry", str(path)), "cannot open registry", words)
    assert not stat.S_ISREG(os.lstat(path).st_mode)


def test_what_every_write_accepts_is_never_read_as_damage(damaged):
    """The read-back check bounds each whole number as the bundle schema does, which every write passes:
    a thread count or a sample's index the schema leaves unbounded reads, whatever its sign."""
    path, (odd, other) = damaged
    _alter(path, f"UPDATE runs SET threads = -1 WHERE id = '{odd}'")
    listed = run_pdx_here("runs", "--json", "--registry", str(path))
    assert listed.returncode == 0 and "could not be read" not in listed.stderr, listed.stderr
    assert sorted(r["id"] for r in json.loads(listed.stdout)) == sorted([odd, other])
