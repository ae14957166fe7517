"""The example engine's versions for ``pdx bench --engine-version``: llama-server builds kept side by
side, one folder per version (``$PDX_EXAMPLE_SERVERS/<version>/llama-server``)."""

import os
from pathlib import Path

from pdx.contract.engine_build import BuiltEngine
from pdx.contract.errors import PdxError


def release(version, say):
    root = os.environ.get("PDX_EXAMPLE_SERVERS")
    if not root:
        raise PdxError("PDX_EXAMPLE_SERVERS is not set",
                       "set it to a folder of llama-server builds, one subfolder per version")
    binary = Path(root) / version / "llama-server"
    if not binary.is_file():
        raise PdxError(f"no llama-server for version {version} in {root}", f"build one into {binary}")
    return BuiltEngine({"server": str(binary)}, f"llama-server {version}", cached=True)
