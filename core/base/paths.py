"""Where pdx keeps its files: one data dir (the registry), one cache dir
(synthetic models, engine builds, content hashes). Both can be moved with
PDX_DATA_DIR / PDX_CACHE_DIR, which the tests use to stay hermetic."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def data_dir() -> Path:
    path = Path(os.environ.get("PDX_DATA_DIR") or platformdirs.user_data_dir("pdx"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir(*parts: str) -> Path:
    root = Path(os.environ.get("PDX_CACHE_DIR") or platformdirs.user_cache_dir("pdx"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
