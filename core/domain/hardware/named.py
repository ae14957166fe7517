"""The chips a post names in its words ("Here are my M1 Max numbers", "RTX 4090
+ 7950X"), for tables that name no device themselves (llama-bench's markdown).

Every run of one to five words of each line is looked up as a chip name
(the catalog's, then the GPU database's); at each place the longest name
wins, so "M1 Max" is not also "M1". A name must hold a letter and a digit:
plain numbers ("540") are too often something else. A backend column narrows
the candidates to the chips that backend runs on (Metal: Apple; CUDA: NVIDIA;
ROCm/HIP: AMD). "2x RTX 3090" says how many.
"""

from __future__ import annotations

import re

from pdx.domain.hardware import catalog
from pdx.domain.hardware.catalog import Chip

_WORD = re.compile(r"[A-Za-z0-9+][A-Za-z0-9+\-.]*")
_MAX_WORDS = 5
_COUNT = re.compile(r"^(\d{1,2})[x×]$", re.I)  # "2x" before a chip's name
_BACKEND_VENDORS = {"metal": {"Apple"}, "cuda": {"NVIDIA"}, "rocm": {"AMD"}, "hip": {"AMD"}}


def _plausible(words: list[str]) -> bool:
    text = "".join(words)
    return any(c.isalpha() for c in text) and any(c.isdigit() for c in text) and len(text) >= 3


def chips_in(text: str, max_lines: int = 2000) -> list[tuple[Chip, int]]:
    """The distinct chips named in ``text``, in order of first mention, each with how many of it the text
    says there are ("2x RTX 3090", "6x 3090": two and six; else one)."""
    found: dict[str, Chip] = {}
    counts: dict[str, int] = {}
    for line in text.splitlines()[:max_lines]:
        words = _WORD.findall(line)[:200]
        i = 0
        while i < len(words):
            for n in range(min(_MAX_WORDS, len(words) - i), 0, -1):
                span = words[i:i + n]
                chip = catalog.find(" ".join(span)) if _plausible(span) else None
                if chip is not None:
                    found.setdefault(chip.id, chip)
                    count = _COUNT.match(words[i - 1]) if i else None
                    counts[chip.id] = max(counts.get(chip.id, 1), int(count[1]) if count else 1)
                    i += n
                    break
            else:
                i += 1
    return [(chip, counts[key]) for key, chip in found.items()]


def narrowed(chips: list[tuple[Chip, int]], backends: str | None) -> list[tuple[Chip, int]]:
    """The chips a backend column ("Metal,BLAS", "CUDA", "ROCm") could have run on."""
    vendors = set()
    for backend in (backends or "").lower().replace(",", " ").split():
        vendors |= _BACKEND_VENDORS.get(backend, set())
    kept = [(c, n) for c, n in chips if c.vendor in vendors] if vendors else chips
    return kept or chips
