"""The machine a benchmark runs on: what it is and what it can do."""

from pdx.hardware.detect import default_threads, detect

__all__ = ["detect", "default_threads"]
