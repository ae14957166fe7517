"""The processes a backend leaves behind: a snapshot of ours before and after.

A server backend starts a server in its own session; its workers may outlive
it. So "ours" is every descendant of this process and every member of a
process group one of them leads. ``ps`` answers on Linux and macOS alike.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    state: str
    command: str


@dataclass(frozen=True)
class Snapshot:
    procs: dict[int, Proc]
    ours: frozenset[int]  # descendants of this process
    groups: frozenset[int]  # process groups they lead (servers started in a session of their own)

    def members(self, groups: frozenset[int]) -> set[int]:
        return {p.pid for p in self.procs.values() if p.pgid in groups}

    def leftovers(self, before: "Snapshot", during: "Snapshot | None" = None) -> list[Proc]:
        """Processes that are ours, or in a group that was ours ``during`` the backend's life,
        now and were not ``before`` it."""
        groups = self.groups | (during.groups if during else frozenset())
        fresh = (self.ours | self.members(groups)) - before.ours - before.members(before.groups)
        return sorted((self.procs[p] for p in fresh), key=lambda p: p.pid)


def _table() -> dict[int, Proc] | None:
    try:
        out = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,pgid=,stat=,comm="], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    procs = {}
    for line in out.splitlines():
        parts = line.split(None, 4)
        if len(parts) >= 4 and parts[0].isdigit():
            pid, ppid, pgid = int(parts[0]), int(parts[1]), int(parts[2])
            procs[pid] = Proc(pid, ppid, pgid, parts[3], parts[4] if len(parts) > 4 else "")
    return procs


def snapshot() -> Snapshot | None:
    """None where ``ps`` is missing (the process checks are then skipped)."""
    procs = _table()
    if procs is None:
        return None
    me = os.getpid()
    ours: set[int] = set()
    frontier = {me}
    while frontier:
        children = {p.pid for p in procs.values() if p.ppid in frontier and p.pid not in ours and p.pid != me}
        ours |= children
        frontier = children
    ps_itself = {p for p in ours if "ps" == procs[p].command.split("/")[-1]}
    ours -= ps_itself
    mine = os.getpgid(me)
    groups = {procs[p].pgid for p in ours if procs[p].pgid != mine and procs[p].pgid == p}
    return Snapshot(procs, frozenset(ours), frozenset(groups))
