"""Reading docs/plugins.rst: its sections, code blocks and console commands (for the tests)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "plugins.rst"
EXAMPLE = ROOT / "docs" / "example-plugin"


def sections(text: str, underline: str) -> dict[str, str]:
    """Title -> body of the sections underlined with ``underline`` characters."""
    pattern = re.compile(rf"^(\S[^\n]*)\n{re.escape(underline)}{{3,}}\n", re.MULTILINE)
    found = list(pattern.finditer(text))
    return {m[1].strip(): text[m.end():found[i + 1].start() if i + 1 < len(found) else len(text)]
            for i, m in enumerate(found)}


def code_blocks(text: str, language: str) -> list[str]:
    """The bodies of ``.. code-block:: language`` directives, dedented."""
    blocks = []
    for match in re.finditer(rf"^\.\. code-block:: {language}\n\n((?:(?:    .*)?\n)+)", text, re.MULTILINE):
        blocks.append(textwrap.dedent(match[1]).strip("\n"))
    return blocks


def commands() -> list[str]:
    """The ``$ `` lines of the "Try it" section, in order."""
    body = sections(GUIDE.read_text(), "-")["Try it"]
    return [line.strip()[2:] for block in code_blocks(body, "console") for line in block.splitlines()
            if line.strip().startswith("$ ")]
