"""A sweep of server configurations: ``--server-grid 'np=4,8,16;fa=on,off'`` (or a file of such
``KEY=V,V`` lines), one run per combination, each with the server started anew on its flags.

A key is one of the backend's :attr:`pdx.measure.serving.backend.ServerBackend.grid_keys`: a short name for
one server flag (``np`` is llama-server's ``--parallel`` and vLLM's ``--max-num-seqs``). A switch
key takes ``on``/``off`` (the flag, or its ``--no-`` form). The combinations run in a seeded random
order, so that a machine's drift during the sweep (heat, a neighbour's load) falls on no axis in step
with its values. Each run is tagged ``sweep:ID`` and ``grid:KEY=VALUE`` per setting: a sweep cut short
is resumed by its id, the combinations whose complete run the registry holds skipped.
"""

from __future__ import annotations

import itertools
import random
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, TypeVar

from pdx.contract.errors import PdxError

SWEEP_TAG = "sweep:"
GRID_TAG = "grid:"
MAX_COMBINATIONS = 256
SWITCH_VALUES = {"on": True, "off": False}
_KEY = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_VALUE = re.compile(r"[A-Za-z0-9_.+-]{1,40}")  # a flag's value: nothing a shell or a tag would mangle
_SWEEP_ID = re.compile(r"[0-9a-f]{8,32}")
T = TypeVar("T")
HINT = "give KEY=V,V[;KEY=V,V], e.g. 'np=4,8;fa=on,off', or a file of such lines"


@dataclass(frozen=True)
class GridKey:
    """One server flag a grid may vary: ``switch`` flags take on/off (the flag or its ``--no-`` form)."""

    flag: str
    about: str
    switch: bool = False

    def flags(self, value: str) -> list[str]:
        if not self.switch:
            return [self.flag, value]
        return [self.flag if SWITCH_VALUES[value] else "--no-" + self.flag.removeprefix("--")]


Grid = dict[str, list[str]]


def parse_grid(text: str, keys: Mapping[str, GridKey]) -> Grid:
    """``'np=4,8;fa=on,off'`` (or lines) -> {"np": ["4", "8"], "fa": ["on", "off"]}, every key one of
    ``keys`` and every value one its flag takes; anything else a one-line error naming it."""
    grid: Grid = {}
    known = ", ".join(sorted(keys)) or "none"
    for part in re.split(r"[;\n]", text):
        part = part.split("#", 1)[0].strip()
        if not part:
            continue
        key, sep, values = part.partition("=")
        key = key.strip()
        if not sep:
            raise PdxError(f"--server-grid: {part!r} is not KEY=V,V", HINT)
        if key not in keys:
            raise PdxError(f"--server-grid: unknown key {key!r}", f"keys of this backend: {known}")
        if key in grid:
            raise PdxError(f"--server-grid: {key} is given twice", "give each key once, with all its values")
        items = [v.strip() for v in values.split(",")]
        if not values.strip() or any(not v for v in items):
            raise PdxError(f"--server-grid: {key} has an empty value in {values.strip()!r}", HINT)
        for value in items:
            if not _VALUE.fullmatch(value):
                raise PdxError(f"--server-grid: {key}={value!r} is no flag value (letters, digits, . _ + -)", HINT)
            if keys[key].switch and value not in SWITCH_VALUES:
                raise PdxError(f"--server-grid: {key} is a switch: give on or off, not {value!r}", HINT)
        if len(set(items)) != len(items):
            raise PdxError(f"--server-grid: {key} repeats a value in {values.strip()!r}", "give each value once")
        grid[key] = items
    if not grid:
        raise PdxError("--server-grid: no KEY=V,V given", HINT)
    count = len(combinations(grid))
    if count > MAX_COMBINATIONS:
        raise PdxError(f"--server-grid: {count} combinations is over the limit of {MAX_COMBINATIONS}",
                       "sweep fewer values, or split the grid into several sweeps")
    return grid


def read_grid(given: str, keys: Mapping[str, GridKey]) -> Grid:
    """The grid of ``--server-grid``: the text itself, or the file it names (one ``KEY=V,V`` a line)."""
    path = Path(given)
    if "=" not in given and path.suffix and not path.is_file():
        raise PdxError(f"--server-grid: no file {given}", HINT)
    if "=" not in given and path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PdxError(f"--server-grid: cannot read {given}: {getattr(exc, 'strerror', None) or exc}") from None
        return parse_grid(text, keys)
    return parse_grid(given, keys)


def combinations(grid: Grid) -> list[dict[str, str]]:
    """Every combination of the grid's values, in the grid's order (the first key slowest)."""
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def interleaved(items: list[T], seed: int) -> list[T]:
    """The order a sweep's runs go in: shuffled by ``seed`` (a resumed sweep draws the same)."""
    order = list(items)
    random.Random(seed).shuffle(order)
    return order


def new_sweep_id() -> str:
    return uuid.uuid4().hex[:12]


def check_sweep_id(sweep_id: str) -> str:
    if not _SWEEP_ID.fullmatch(sweep_id):
        raise PdxError(f"--sweep {sweep_id!r} is not a sweep id (8 to 32 hex digits)",
                       "give the id pdx printed when the sweep started (its runs' sweep: tag)")
    return sweep_id


def tags(sweep_id: str, combo: Mapping[str, str]) -> list[str]:
    """The tags of a combination's run: its sweep, then one per setting."""
    return [SWEEP_TAG + sweep_id, *(f"{GRID_TAG}{k}={v}" for k, v in combo.items())]


def settings(run_tags) -> dict[str, str]:
    """The grid settings a run's tags name ({} for a run of no sweep)."""
    out = {}
    for tag in run_tags or ():
        if isinstance(tag, str) and tag.startswith(GRID_TAG):
            key, _, value = tag[len(GRID_TAG):].partition("=")
            out[key] = value
    return out


def sweep_of(run_tags) -> str | None:
    return next((t[len(SWEEP_TAG):] for t in run_tags or () if isinstance(t, str) and t.startswith(SWEEP_TAG)), None)


def server_flags(combo: Mapping[str, str], keys: Mapping[str, GridKey]) -> list[str]:
    return [flag for key, value in combo.items() for flag in keys[key].flags(value)]


def label(combo: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in combo.items())
