"""A wall plug for the energy tests: a thread keeps a joule counter in a file, as a smart plug's
exporter does, drawing ``idle_w`` and ``busy_w`` more while tests/sleep_backend.py works.

A test double of the *power* (this VM has no RAPL, no NVML, no plug): it stands in for the
machine's draw so the arithmetic can be checked against known watts. The meter reading it is the
example plugin's (docs/example-plugin/pdx_example/meter.py), unchanged.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import sleep_backend


class Plug:
    def __init__(self, path: Path, idle_w: float = 20.0, busy_w: float = 80.0, period: float = 0.002) -> None:
        self.path, self.idle_w, self.busy_w, self.period = Path(path), idle_w, busy_w, period
        self.joules = 0.0
        self.busy = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._write()

    def _write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(f"{self.joules:.6f}\n")
        os.replace(tmp, self.path)  # a reader never sees half a number

    def _loop(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.period):
            now = time.monotonic()
            self.joules += (self.idle_w + (self.busy_w if self.busy else 0.0)) * (now - last)
            last = now
            self._write()

    def __enter__(self) -> "Plug":
        original = sleep_backend.SleepBackend._work
        plug = self

        def work(backend, tokens):
            plug.busy += 1
            try:
                original(backend, tokens)
            finally:
                plug.busy -= 1

        self._original = original
        sleep_backend.SleepBackend._work = work
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        sleep_backend.SleepBackend._work = self._original
