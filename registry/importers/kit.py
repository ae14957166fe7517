"""What a plugin registers to teach ``pdx import`` a format (``pdx_register_importers``).

An :class:`Importer` names a format, says whether a file is in it, and
reads the file into whole run records: the shape ``pdx show --json``
prints, with pdx's hardware, model and environment blocks (build them with
the helpers below, which put ``None`` where the tool said nothing). Every
record an importer returns is checked against the bundle schema before
anything is stored, and a file is stored all or nothing. An importer raises
:class:`pdx.contract.errors.ImportFileError` (``fail(path, reason)``) with one line
for a file it cannot read; any other exception from a plugin's importer is
reported as that importer's failure, in one line, with nothing stored.
pdx's own formats register through the same hook.
"""

from __future__ import annotations

# The type (in the contract, which plugin_manager and hookspecs stand on), the helpers every importer
# builds its records with, and the checked converters for every field it reads
# (pdx.registry.importers.common; re-exported here, one import for plugins).
from pdx.contract.importer import Detector, Importer, Reader  # noqa: F401
from pdx.registry.bundle import fail  # noqa: F401
from pdx.registry.importers.common import (  # noqa: F401
    described_environment, described_hardware, described_model, file_facts, imported_run, integer, make_test,
    number, numbers, optional_integer, sample, text, timestamp,
)
