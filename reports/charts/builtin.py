"""pdx's own charts, registered through the same hook a plugin uses (entry point ``charts``).

Imported by every ``pdx`` command, so it imports the chart code only when the hook is called.
"""

from pdx import hookimpl


@hookimpl
def pdx_register_charts(register):
    from pdx.reports.charts.chartset import BUILTIN

    for make in BUILTIN:
        register(make)
