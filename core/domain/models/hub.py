"""Hugging Face Hub repo ids as models, for backends that load them (MLX).

A model argument is a repo id only if it has the form ``owner/name``, does not
exist here as a path, and ``owner`` is not a folder here (``models/x`` next
to a ``models`` folder is a mistyped path). Anything else is a path and is
checked locally only: a missing path fails at once, with no network attempt.
A repo id is taken from the local Hugging Face cache when it is there (no
network), else downloaded, unless ``HF_HUB_OFFLINE`` is set.
"""

from __future__ import annotations

import re
from pathlib import Path

from pdx.contract.errors import ModelError

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
_SUFFIXES = (".gguf", ".safetensors", ".bin", ".json")
# What mlx-lm itself downloads for a model: weights, configs, tokenizer files.
ALLOW_PATTERNS = ["*.json", "*.safetensors", "*.py", "tokenizer.model", "*.tiktoken", "tiktoken.model", "*.txt",
                  "*.jsonl", "*.jinja"]


def is_repo_id(text: str) -> bool:
    if not _REPO_ID.match(text) or text.lower().endswith(_SUFFIXES) or Path(text).exists():
        return False
    return not Path(text.split("/", 1)[0]).exists()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def snapshot(repo_id: str) -> Path:
    """The local directory of ``repo_id``: from the cache, else downloaded."""
    try:
        from huggingface_hub import constants, snapshot_download
        from huggingface_hub.errors import GatedRepoError, LocalEntryNotFoundError, RepositoryNotFoundError
    except ImportError:
        raise ModelError(f"{repo_id} is not a path here, and huggingface_hub (to fetch it as a Hub model) is "
                         "not installed", "give a local model directory") from None
    try:
        return Path(snapshot_download(repo_id, allow_patterns=ALLOW_PATTERNS, local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    if constants.HF_HUB_OFFLINE:
        raise ModelError(f"{repo_id} is not a path here nor in the Hugging Face cache, and HF_HUB_OFFLINE is set",
                         "give a local model directory, or download it first")
    try:
        return Path(snapshot_download(repo_id, allow_patterns=ALLOW_PATTERNS))
    except GatedRepoError:
        raise ModelError(f"{repo_id} is gated on the Hugging Face Hub",
                         "accept its terms on its page and log in with `hf auth login`") from None
    except RepositoryNotFoundError:
        raise ModelError(f"{repo_id} is not a path here nor a model on the Hugging Face Hub (or it is private)",
                         "check the name, or give a local model directory") from None
    except Exception as exc:  # no network, a proxy, a full disk: all end the same way for the user
        raise ModelError(f"{repo_id}: cannot download it from the Hugging Face Hub: {_first_line(exc)}",
                         "check the network, or give a local model directory") from None
