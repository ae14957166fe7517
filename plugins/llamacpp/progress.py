"""A compile's progress from ninja's ``[N/M]`` steps, with an estimate of the time left.

On a terminal one line is redrawn in place; elsewhere (CI logs) a plain line is written at every
tenth of the steps, so a 30-minute build is ten lines, not one and not thousands. The estimate is
the average time per step so far times the steps left: steps differ in cost (a CUDA kernel file
against a small C file), so it is rough early on and firms up as the build goes.
"""

from __future__ import annotations

import re
import time
from typing import Callable

_STEP = re.compile(r"^\[(\d+)/(\d+)\]")


def ninja_step(line: str) -> tuple[int, int] | None:
    """(done, total) from a ninja status line such as ``[12/359] Building CXX object ...``."""
    match = _STEP.match(line)
    if not match:
        return None
    done, total = int(match[1]), int(match[2])
    return (done, total) if 0 < done <= total else None


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


class NinjaProgress:
    """Feed it each line of ninja's output; it writes the progress with ``write``.

    ``live``: a terminal (redraw one line with a carriage return); else a line per tenth.
    Lines of a nested build (llama.cpp's Vulkan shader generator is a project of its own, with
    its own few steps) are told apart by their smaller total and left out.
    """

    def __init__(self, write: Callable[[str], None], live: bool, label: str = "compiling",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.write, self.live, self.label, self.clock = write, live, label, clock
        self.started = clock()
        self.total = 0
        self.done = 0
        self._tenth = 0
        self._drawn = False

    def feed(self, line: str) -> None:
        step = ninja_step(line)
        if step is None or step[1] < self.total:
            return
        self.done, self.total = step
        if self.live:
            self.write(f"\r{self.line()}\033[K")
            self._drawn = True
        elif self.done * 10 // self.total > self._tenth:
            self._tenth = self.done * 10 // self.total
            self.write(self.line() + "\n")

    def line(self) -> str:
        elapsed = self.clock() - self.started
        share = self.done / self.total
        text = f"{self.label}: {self.done}/{self.total} steps ({share:.0%}), {_duration(elapsed)} so far"
        if 0 < self.done < self.total:
            text += f", about {_duration(elapsed / self.done * (self.total - self.done))} left"
        return text

    def close(self) -> None:
        """End the redrawn line (a terminal's next output starts on its own line)."""
        if self._drawn:
            self.write("\n")
            self._drawn = False
