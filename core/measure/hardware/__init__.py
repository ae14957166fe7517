"""The machine a benchmark runs on, found and measured here: detection (matched to the hardware
catalog of :mod:`pdx.domain.hardware`) and the probes of what it can do."""

from pdx.measure.hardware.detect import default_threads, detect

__all__ = ["default_threads", "detect"]
