"""The machine a benchmark runs on: what it is (detection, matched to the
hardware catalog) and what it can do (vendor figures, or probes)."""

from pdx.domain.hardware import catalog
from pdx.domain.hardware.apple import apple_chip
from pdx.measure.hardware.detect import default_threads, detect

__all__ = ["apple_chip", "catalog", "default_threads", "detect"]
