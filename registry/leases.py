"""Which process is running each unfinished run, so that a run whose process was killed (``kill -9``,
a lost machine) does not stay "running" for ever.

A run that starts takes a lease: its machine's name, the kernel's boot id, the process's pid, pid
namespace and start time. A run that finishes gives it back, in the transaction that records how it
ended. Whoever opens the registry next on that machine (any command) finds the leases of processes
that are gone and marks their runs interrupted, as a run stopped by Ctrl-C is. A lease is judged
only where it can be: on its own machine, in the boot and pid namespace it was taken in (any other
boot means its process is gone); a lease from another machine is left to that machine.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timezone

from sqlalchemy import CursorResult, delete, select, update
from sqlalchemy.orm import Session

from pdx.registry.schema import Run, RunLease

ENDED = "its pdx process (pid {pid} on {host}) ended without finishing it: killed, or the machine stopped"


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _boot() -> str | None:
    return _read("/proc/sys/kernel/random/boot_id")


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")[:64]
    except OSError:
        return None


def _started(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot: /proc/PID/stat's 22nd field), or None."""
    text = _read(f"/proc/{pid}/stat")
    if text is None:
        return None
    try:
        return int(text.rpartition(")")[2].split()[19])  # fields after the name, which may hold spaces
    except (IndexError, ValueError):
        return None


def this_process(run_id: str) -> RunLease:
    pid = os.getpid()
    return RunLease(run_id=run_id, host=socket.gethostname()[:256], boot=_boot(), pid_namespace=_pid_namespace(),
                    pid=pid, started=_started(pid))


def gone(lease: RunLease) -> bool:
    """Whether the lease's process has certainly ended; False wherever that cannot be told from here."""
    if lease.host != socket.gethostname()[:256]:
        return False
    boot = _boot()
    if lease.boot and boot and lease.boot != boot:
        return True  # the machine started again since: every process of that boot is gone
    if lease.pid_namespace != _pid_namespace():
        return False  # another container's pids: not ours to judge
    if lease.pid == os.getpid():
        return False
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # a process of another user: alive, unless it is another process by the same pid
    except OSError:
        return False
    started = _started(lease.pid)
    return lease.started is not None and started is not None and started != lease.started


def take(session: Session, run_id: str) -> None:
    session.add(this_process(run_id))


def give_back(session: Session, run_id: str) -> None:
    session.execute(delete(RunLease).where(RunLease.run_id == run_id))


def reap(session: Session, now: datetime | None = None) -> list[str]:
    """Mark interrupted every running run whose process is gone from this machine; their ids. Reads
    the leases of this machine first, and writes only where one is gone."""
    leases = [lease for lease in session.scalars(select(RunLease).where(RunLease.host == socket.gethostname()[:256]))
              if gone(lease)]
    if not leases:
        return []
    now = now or datetime.now(timezone.utc)
    ended = []
    for lease in leases:
        done = session.execute(update(Run).where(Run.id == lease.run_id, Run.status == "running").values(
            status="interrupted", error=ENDED.format(pid=lease.pid, host=lease.host), finished_at=now))
        assert isinstance(done, CursorResult)  # an UPDATE's result: rows counted, none returned
        if done.rowcount:
            ended.append(lease.run_id)
        session.execute(delete(RunLease).where(RunLease.run_id == lease.run_id, RunLease.pid == lease.pid))
    return ended
