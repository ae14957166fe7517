"""pdx's own meter sources, registered as any plugin's are (entry point ``meters``)."""

from __future__ import annotations

from pdx import hookimpl


@hookimpl
def pdx_register_meters(register) -> None:
    from pdx.measure.energy.zeus_meters import SOURCES

    for source in SOURCES:
        register(source)
