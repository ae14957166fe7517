"""The chips a post names in its words ("Here are my M1 Max numbers", "RTX 4090
+ 7950X"), for tables that name no device themselves (llama-bench's markdown).

A line's words are read without vendor noise ("GPU: NVIDIA GeForce" counts for
nothing, :mod:`pdx.domain.hardware.chip_words`); every run of one to eight of the rest
is looked up as a chip name (a name never runs across punctuation) (the catalog's, then the GPU database's, one chip
for one GPU whichever names it); at each place the longest name wins, so
"M1 Max" is not also "M1". A name must hold a letter and a digit: plain numbers
("540") are too often something else. The chip or none, never another: a name
followed by a word that makes another part ("RTX 4060" + "Ti", "RX 9070" +
"XT", an "RTX 4090" + "48GB" pdx has no such card of) is no chip pdx knows,
and is kept as such so the ceiling can say so. A backend column narrows the
candidates to the chips that backend runs on (Metal: Apple; CUDA: NVIDIA;
ROCm/HIP: AMD; SYCL: Intel; MTL, newer builds' name for Metal, and MLX: Apple; vLLM, an engine
that runs on a GPU: the GPU). "2x RTX 3090", "8x A100", "A100 x8" say how many.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from pdx.domain.hardware import catalog, chip_words
from pdx.domain.hardware.catalog import Chip

_WORD = re.compile(r"[A-Za-z0-9+][A-Za-z0-9+\-.]*")
_MAX_WORDS = 8  # "GeForce RTX 3050 Max-Q Refresh 4 GB" is six words less its vendor's
_BREAK = re.compile(r"[,;:()|/\[\]=]")  # a name never runs across these ("X800 GTO, 2 runs" is no "X800 GTO2")
_COUNT = re.compile(r"^(\d{1,2})[x×]$", re.I)  # "2x" before a chip's name
_COUNT_JOINED = re.compile(r"^(\d{1,2})[x×]([A-Za-z].*)$", re.I)  # "8xA100"
_COUNT_AFTER = re.compile(r"^[x×](\d{1,2})$", re.I)  # "A100 x8"
# llama.cpp's device list ("  Device 3: NVIDIA A100-SXM4-80GB, compute capability 8.0", "ggml_vulkan: 1 = ..."):
# a chip listed under k device numbers ran as k devices (a log of several runs lists them again)
_DEVICE_LINE = re.compile(r"^\W*(?:Device (?P<index>\d+):|ggml_vulkan: (?P<vk>\d+) =)\s*(?P<name>[^,|(]+)", re.I)
_GPU_BACKENDS = {"cuda", "rocm", "hip", "vulkan", "sycl", "opencl", "musa", "cann", "vllm"}  # vLLM: a GPU engine
_GPU_VENDORS = {"NVIDIA", "AMD", "Intel", "Apple"}  # a SoC of theirs runs a GPU backend on its own GPU
_BACKEND_VENDORS = {"metal": {"Apple"}, "mtl": {"Apple"}, "mlx": {"Apple"}, "cuda": {"NVIDIA"}, "rocm": {"AMD"},
                    "hip": {"AMD"}, "sycl": {"Intel"}}


@dataclass
class Named:
    """What a text names: the chips pdx knows (with how many of each), and names it does not know as a
    whole ("RTX 4060 Ti SUPER" where only "RTX 4060" is known)."""

    chips: list[tuple[Chip, int]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


_FAMILIES = {"rtx", "gtx", "rx", "arc", "quadro", "mi"}  # a series word before its model number
_FORM_FACTORS = {"laptop", "mobile"}  # another GPU after a card's name ("RTX 4090 Laptop"); after a SoC's, its machine
# Makers of chips and boards pdx may have no figures for: their word and the model words after it, up to
# one with a digit ("Cix CP8180", "Radxa Dragon Q8B", "Ampere A1"), name a chip the ceiling can say it lacks.
_MAKERS = {"cix", "rockchip", "qualcomm", "mediatek", "ampere", "radxa", "exynos", "kirin", "ascend", "allwinner",
           "amlogic", "sophgo", "tenstorrent", "loongson", "phytium", "hailo", "khadas", "pine64"}
_APPLE_BASE = re.compile(r"^M[1-9]$")  # "M5": Apple's base chips are two characters, written in capitals


def _plausible(words: list[str]) -> bool:
    text = "".join(words)
    if len(words) > 1 and catalog.normalize(" ".join(words)) in _wordy_names():  # "Snapdragon X Elite"
        return True
    return any(c.isalpha() for c in text) and any(c.isdigit() for c in text) and (
        len(text) >= 3 or bool(_APPLE_BASE.match(text)))


@functools.lru_cache(maxsize=1)
def _wordy_names() -> frozenset[str]:
    """The catalog's names of several words and no digit ("x elite"): a chip though no word holds a number."""
    names = (n for c in catalog.chips() for n in (c.name, *c.aliases))
    return frozenset(catalog.normalize(n) for n in names
                     if len(_significant(n)) > 1 and not any(ch.isdigit() for ch in n))


def _significant(line: str) -> list[str]:
    """A line's words less vendor noise, with a count joined to a name ("8xA100") split off it."""
    words = []
    for word in _WORD.findall(line)[:200]:
        if joined := _COUNT_JOINED.match(word):
            words += [f"{joined[1]}x", joined[2]]
        elif word.lower().strip(".-") not in chip_words.NOISE:
            words.append(word.rstrip(".,:;"))
    return [w for w in words if w]


def _another_part(chip: Chip, after: list[str]) -> bool:
    """Whether the words after a chip's name make it another part pdx does not know: a suffix word, or a
    memory size the chip does not have (a SoC's memory is its configuration, not another chip)."""
    if not after:
        return False
    word = after[0].lower()
    if word in chip_words.SUFFIXES and not (chip.kind == "soc" and word in _FORM_FACTORS):
        return True
    size = chip_words.memory_size(word, after[1] if len(after) > 1 else None)
    if size is None or chip.kind == "soc":
        return False
    return chip.memory_gb is None or abs(chip.memory_gb.value - size) > 0.5


def _made_by(words: list[str], i: int) -> str | None:
    """A maker's word at ``i`` and its model words ("Cix CP8180"), where none of them is a chip pdx knows
    ("Ampere A100" is NVIDIA's A100, found on the next word)."""
    if words[i].lower() not in _MAKERS:
        return None
    for j in range(i + 1, min(i + 4, len(words))):
        if any(c.isdigit() for c in words[j]):
            model = words[i + 1:j + 1]
            known = any(catalog.find(" ".join(model[k:])) for k in range(len(model)))
            return None if known else " ".join(words[i:j + 1])
    return None


def _segments(lines: list[str]):
    """(text, its device number where llama.cpp's device list names it): a name never runs across
    punctuation."""
    for line in lines:
        device = _DEVICE_LINE.match(line)
        if device:
            yield device["name"], int(device["index"] or device["vk"])
            continue
        for part in _BREAK.split(line):
            yield part, None


def read(text: str, max_lines: int = 2000) -> Named:
    """The distinct chips named in ``text``, in order of first mention, each with how many of it the text
    says there are ("2x RTX 3090", "6x 3090": two and six; else one), and the names it gives that are no
    chip pdx knows as written."""
    found: dict[str, Chip] = {}
    counts: dict[str, int] = {}
    unknown: list[str] = []
    listed: dict[str, set[int]] = {}
    for segment, device_line in _segments(text.splitlines()[:max_lines]):
        words = _significant(segment)
        i = 0
        while i < len(words):
            for n in range(min(_MAX_WORDS, len(words) - i), 0, -1):
                span = words[i:i + n]
                chip = catalog.find(" ".join(span)) if _plausible(span) else None
                if chip is not None:
                    break
            else:
                family = words[i].lower() in _FAMILIES and i + 1 < len(words) and any(c.isdigit() for c in words[i + 1])
                several = catalog.candidates(" ".join(words[i:i + 2])) if family else []
                if len(several) > 1:  # "RTX 6000": several cards, none of them named
                    name = f"{' '.join(words[i:i + 2])} (one of: {'; '.join(several[:4])})"
                    if name not in unknown:
                        unknown.append(name)
                    i += 2
                    continue
                if (made := _made_by(words, i)) and made not in unknown:
                    unknown.append(made)
                i += 1
                continue
            after = words[i + n:i + n + 2]
            if _another_part(chip, after):
                name = " ".join(span + after[:1])
                if name not in unknown:
                    unknown.append(name)
                i += n + 1
                continue
            found.setdefault(chip.id, chip)
            before = _COUNT.match(words[i - 1]) if i else None
            later = _COUNT_AFTER.match(after[0]) if after else None
            said = before or later
            count = int(said[1]) if said else 1
            counts[chip.id] = max(counts.get(chip.id, 1), count)
            if device_line is not None:
                listed.setdefault(chip.id, set()).add(device_line)
            i += n
    return Named([(chip, max(counts[key], len(listed.get(key, ())))) for key, chip in found.items()], unknown)


def chips_in(text: str, max_lines: int = 2000) -> list[tuple[Chip, int]]:
    """The distinct chips named in ``text`` with their counts (:func:`read`)."""
    return read(text, max_lines).chips


def narrowed(chips: list[tuple[Chip, int]], backends: str | None) -> list[tuple[Chip, int]]:
    """The chips a backend column ("Metal,BLAS", "CUDA", "ROCm") could have run on: a GPU backend's the
    GPU where the post names a GPU and its host ("RX 7900 XT on a Raspberry Pi 5"), a CPU build's the
    host."""
    words = set((backends or "").lower().replace(",", " ").split())
    vendors = set()
    for backend in words:
        vendors |= _BACKEND_VENDORS.get(backend, set())
    kept = [(c, n) for c, n in chips if c.vendor in vendors] if vendors else chips
    kept = kept or chips
    if words & _GPU_BACKENDS and any(c.kind == "gpu" for c, _ in kept):
        kept = [(c, n) for c, n in kept if c.kind == "gpu" or c.vendor in _GPU_VENDORS]
    elif words and not words & (_GPU_BACKENDS | {"metal", "mtl", "mlx"}) and any(c.kind != "gpu" for c, _ in kept):
        kept = [(c, n) for c, n in kept if c.kind != "gpu"]
    return kept


# ggml-vulkan's device line: "ggml_vulkan: 0 = Intel(R) Arc(tm) A310 Graphics (DG2) (...) | uma: 0 | fp16: 1 |
# bf16: 0 | warp size: 32 | shared memory: 65536 | int dot: 1 | matrix cores: none"
_VULKAN_FIELD = re.compile(r"\|\s*(fp16|int dot|matrix cores|uma)\s*:\s*([^|]+?)\s*(?=\||$)", re.I)
_VULKAN_NAME = re.compile(r"ggml_vulkan: \d+ = ([^|]*)")
_DRIVER_WORDS = re.compile(r"(\s+\([^()]*\))+\s*$")  # " (RADV NAVI31) (radv)" after the name


def vulkan_devices(text: str, max_lines: int = 2000) -> list[dict[str, object]]:
    """What ggml-vulkan said of each device it found, once per device number: its name, whether it
    multiplies on matrix cores (the cooperative-matrix extension it names, or "none"), has int8 dot
    products, and fp16 arithmetic. Older builds print fewer fields; a field not printed is left out."""
    devices: dict[int, dict[str, object]] = {}
    for line in text.splitlines()[:max_lines]:
        device, named_as = _DEVICE_LINE.match(line), _VULKAN_NAME.search(line)
        if not (device and device["vk"] and named_as) or int(device["vk"]) in devices:
            continue
        said: dict[str, object] = {"name": _DRIVER_WORDS.sub("", named_as[1]).strip()}
        for key, value in _VULKAN_FIELD.findall(line):
            key = key.lower().replace(" ", "_")
            said[key] = value.strip() if key == "matrix_cores" else value.strip() == "1"
        devices[int(device["vk"])] = said
    return [devices[i] for i in sorted(devices)]
