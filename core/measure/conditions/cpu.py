"""CPU time from /proc: the whole machine's, and pdx's own process tree's.

Other processes' CPU use over a test is the machine's busy time minus the
time of pdx's process and every descendant (an engine's server, a probe's
child): both read at the test's start and end. A process's own time plus
the time of the children it has reaped (``cutime``, ``cstime``) is summed
over the tree, so a child that exits mid-test still counts as pdx's.
"""

from __future__ import annotations

import os
from pathlib import Path

# /proc/stat's first line, after "cpu": user nice system idle iowait irq softirq steal guest guest_nice.
# Busy is what a process or the kernel on its behalf ran; guest time is already inside user.
_BUSY_FIELDS = (0, 1, 2, 5, 6)
_STEAL_FIELD = 7


def clock_ticks() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        return 100


def parse_proc_stat(text: str) -> dict[str, int] | None:
    """Busy and steal ticks of all CPUs from /proc/stat (None when the line is not there)."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            values = [int(v) for v in parts[1:] if v.isdigit()]
            if len(values) < 4:
                return None
            busy = sum(values[i] for i in _BUSY_FIELDS if i < len(values))
            return {"busy": busy, "steal": values[_STEAL_FIELD] if len(values) > _STEAL_FIELD else 0}
    return None


def parse_pid_stat(text: str) -> tuple[int, int] | None:
    """(parent pid, ticks of the process and its reaped children) from /proc/PID/stat.

    The command name (field 2) may hold spaces and parentheses, so the fields
    are counted from the last ')'."""
    head, sep, rest = text.rpartition(")")
    if not sep:
        return None
    fields = rest.split()
    if len(fields) < 15 or not all(f.lstrip("-").isdigit() for f in fields[1:15]):
        return None
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    return ppid, utime + stime + max(0, cutime) + max(0, cstime)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def machine_ticks(proc: Path = Path("/proc")) -> dict[str, int] | None:
    text = _read(proc / "stat")
    return parse_proc_stat(text) if text else None


def tree_ticks(root_pid: int, proc: Path = Path("/proc")) -> int | None:
    """Ticks of ``root_pid`` and all its descendants (None without /proc)."""
    if not proc.is_dir():
        return None
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        text = _read(entry / "stat")
        parsed = parse_pid_stat(text) if text else None
        if parsed:
            parents[int(entry.name)], ticks[int(entry.name)] = parsed
    if root_pid not in ticks:
        return None
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total
