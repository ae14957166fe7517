"""What a plugin registers to teach ``pdx import`` a format (``pdx_register_importers``).

An :class:`Importer` names a format, says whether a file is in it, and
reads the file into whole run records: the shape ``pdx show --json``
prints, with pdx's hardware, model and environment blocks (build them with
the helpers below, which put ``None`` where the tool said nothing). Every
record an importer returns is checked against the bundle schema before
anything is stored, and a file is stored all or nothing. An importer raises
:class:`pdx.errors.ImportFileError` (``fail(path, reason)``) with one line
for a file it cannot read; any other exception from a plugin's importer is
reported as that importer's failure, in one line, with nothing stored.
pdx's own formats register through the same hook.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pdx.errors import PdxError

# The helpers every importer builds its records with, and the checked converters for
# every field it reads (pdx.registry.importers.common; re-exported for plugins).
from pdx.registry.bundle import fail  # noqa: F401
from pdx.registry.importers.common import (  # noqa: F401
    described_environment, described_hardware, described_model, file_facts, imported_run, integer, make_test,
    number, numbers, optional_integer, sample, text, timestamp,
)

_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{0,31}$")
Reader = Callable[[Path, str, object, "str | None"], list]
Detector = Callable[[str, object], bool]


@dataclass(frozen=True)
class Importer:
    """One format ``pdx import`` reads.

    ``read(path, text, document, hardware)`` returns the file's run records;
    ``document`` is the parsed JSON when the file is one JSON document (else
    None) and ``hardware`` the catalog name the user gave with ``--hardware``
    (or None). ``detect(text, document)`` says whether a file is in this
    format, for ``--format auto``; without one, the format is used only when
    named. Detectors run in ``priority`` order, lowest first. ``json``: the
    format is one JSON document, so a file that is not valid JSON is refused
    before ``read``, saying where it breaks.
    """

    name: str
    description: str
    read: Reader
    detect: Detector | None = None
    priority: int = 100
    json: bool = False
    plugin: str = ""  # the plugin that registered it (set by pdx)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name) or self.name in ("auto", "bundle"):
            raise PdxError(f"importer name {self.name!r}: use 1-32 lowercase letters, digits, '.' or '-' "
                           "(not auto or bundle)")
        if not callable(self.read) or (self.detect is not None and not callable(self.detect)):
            raise PdxError(f"importer {self.name}: read (and detect, if given) must be callables")
