"""Numbers as users type them, read by one parser for every option and file field.

Python's own readers take too much: ``float("nan")``, ``float("inf")`` and
``float("1e400")`` (infinity) are numbers to it, ``"²".isdigit()`` is true
while ``int("²")`` fails, and ``int`` has no upper bound. Here a number is
plain ASCII decimal (``512``, ``1.05``, ``2.5e-3``), finite, and within the
bounds the option names; anything else is one :class:`~pdx.contract.errors.PdxError`
line naming the option.
"""

from __future__ import annotations

import math
import re

from pdx.contract.errors import PdxError

INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
MAX_TEXT = 64  # characters: longer than any sensible number
# Beyond these, a figure is a typo (or an attack), never a measurement or a setting.
MAX_INT = 2**63 - 1
MAX_FLOAT = 1e30
MAX_TOKENS = 2**24  # prompt, generation and context lengths, model dimensions: 16M, past any model's context
MAX_BATCH = 2**16
MAX_COUNT = 10**6  # repetitions, requests, concurrency
MAX_THREADS = 4096


def quoted(text: str) -> str:
    """A value as given, quoted and cut short, so that an error naming it stays one line."""
    return repr(text if len(text) <= 24 else text[:21] + "...")


def _text(value: object, flag: str) -> str:
    text = str(value).strip()
    if not text:
        raise PdxError(f"{flag}: a number is needed, not an empty value")
    if len(text) > MAX_TEXT:
        raise PdxError(f"{flag}: {quoted(text)} is too long to be a number")
    return text


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _bounds(value, text: str, flag: str, minimum, maximum, min_open: bool = False) -> None:
    if minimum is not None and (value < minimum or (min_open and value == minimum)):
        edge = "above" if min_open else "at least"
        raise PdxError(f"{flag}: {quoted(text)} is too small; it must be {edge} {_number(minimum)}")
    if maximum is not None and value > maximum:
        raise PdxError(f"{flag}: {quoted(text)} is too large; it must be at most {_number(maximum)}")


def parse_int(value: object, flag: str, minimum: int | None = 0, maximum: int | None = MAX_INT) -> int:
    """A whole number in [minimum, maximum] (None: unbounded on that side, but always 64-bit)."""
    if isinstance(value, int) and not isinstance(value, bool):
        number, text = value, str(value)
    else:
        text = _text(value, flag)
        if not INTEGER.fullmatch(text):
            raise PdxError(f"{flag}: {quoted(text)} is not a whole number (use ASCII digits, e.g. 512)")
        number = int(text)
    _bounds(number, text, flag, minimum, MAX_INT if maximum is None else maximum)
    _bounds(number, text, flag, -MAX_INT - 1, None)
    return number


def parse_float(value: object, flag: str, minimum: float | None = None, maximum: float | None = MAX_FLOAT,
                min_open: bool = False) -> float:
    """A finite decimal number in [minimum, maximum] (``min_open``: above minimum); never NaN or infinite."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number, text = float(value), str(value)
    else:
        text = _text(value, flag)
        if not DECIMAL.fullmatch(text):
            raise PdxError(f"{flag}: {quoted(text)} is not a number (use ASCII digits, e.g. 1.05 or 2e-3)")
        number = float(text)
    if not math.isfinite(number):
        raise PdxError(f"{flag}: {quoted(text)} is not a finite number")
    _bounds(number, text, flag, minimum, MAX_FLOAT if maximum is None else maximum, min_open)
    _bounds(number, text, flag, -MAX_FLOAT, None)
    return number
