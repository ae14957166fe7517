"""``sysctl`` output, read the one way both the hardware detection (:mod:`pdx.hardware.apple`) and
the run conditions (:mod:`pdx.conditions.gpu_memory`) need it; a module of its own so that neither
package imports the other (the probes record the conditions they ran under)."""

from __future__ import annotations


def parse_sysctl(text: str) -> dict[str, str]:
    """``sysctl a b c`` output ("key: value" lines) as a dict."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            values[key.strip()] = value.strip()
    return values
