"""What a machine's chips can do: the hardware catalog of vendor figures, chips named as people name
them, GPU databases, matrix rates, and the arithmetic of probes (the probes themselves and detection
run in :mod:`pdx.measure.hardware`)."""

from pdx.domain.hardware import catalog
from pdx.domain.hardware.apple import apple_chip

__all__ = ["apple_chip", "catalog"]
