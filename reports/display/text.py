"""The one sanitiser for text pdx prints to a terminal.

Names, tags, paths and error messages come from files other people made. A terminal obeys the
control sequences in them (``ESC]0;...BEL`` retitles the window, ``ESC[2J`` clears the screen, a
right-to-left override reorders what follows), so every such character is printed as its escape
(``\\x1b``) instead: visible, and inert. Tabs and newlines stay.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.text import Text

# C0 and C1 controls but tab and newline, DEL, and the bidirectional overrides and isolates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character written as its escape."""
    return text if text.isprintable() or not _UNSAFE.search(text) else _UNSAFE.sub(_escaped, text)


class SafeConsole(Console):
    """A rich console that passes every string it renders (a table cell, a line) through
    :func:`printable` before markup is read, so widths are measured on what is shown."""

    def render_str(self, text: str, **kwargs) -> Text:
        return super().render_str(printable(text), **kwargs)
