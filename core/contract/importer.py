"""The type a plugin registers to teach ``pdx import`` a format; plugins import it, with the
helpers that build records, from :mod:`pdx.registry.importers.kit`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pdx.contract.errors import PdxError

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


def check_importer(importer: object) -> Importer:
    """A registered importer, vetted before pdx relies on it."""
    if not isinstance(importer, Importer):
        raise PdxError(f"it registered {importer!r}, which is not a pdx.registry.importers.kit.Importer")
    return importer
