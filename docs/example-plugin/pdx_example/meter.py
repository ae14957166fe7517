"""A wall-plug energy meter: a smart plug's exporter (a Shelly or Tasmota script, say) keeps the
plug's energy counter, in joules, in a file; pdx reads it around every timed repetition.

Set ``PDX_EXAMPLE_PLUG_FILE`` to the file. The plug measures the whole machine, so pdx uses it
alone (another meter's joules are already in it).
"""

import os

from pdx.contract.meter import Meter, MeterUnavailable

VARIABLE = "PDX_EXAMPLE_PLUG_FILE"


def find_plug():
    path = os.environ.get(VARIABLE)
    if not path:
        raise MeterUnavailable(f"{VARIABLE} is not set")
    if not os.path.isfile(path):
        raise MeterUnavailable(f"{VARIABLE} names no file ({path})")

    def read():
        with open(path) as counter:
            return float(counter.read().split()[0])

    return [Meter(name="plug", covers="machine", device="the wall plug", read=read, source=f"file {path}")]
