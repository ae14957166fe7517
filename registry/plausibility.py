"""What no honest record holds, stated once: a rate faster than the fastest chip pdx knows could
run the model, and a date before pdx and the tools it reads existed or after tomorrow.

A stored ceiling judges a run against its own chip (:mod:`pdx.api.contrib.plausible`); these bounds
need none, so a run stored without a ceiling, or one whose figures were all forged with care and
re-signed, is still held to physics. Every write checks them (:mod:`pdx.registry.validate`: bench,
import, pull, push), and so does ``pdx hub verify``.

Rates, for every sample of a pp/tg/pg test (and the mean a tool reported where it kept none):

- compute: every token costs at least 2 x the parameters it uses in FLOPs, so tokens/s is at
  most FLOP/s / (2 x active parameters);
- decode: each step reads the weights its tokens use at least once, so generated tokens/s is at
  most batch x bandwidth / (the model's bytes x the share of it one token uses);

with the highest FLOP/s and bandwidth of any chip in pdx's hardware catalog (sparse peaks as
printed), times the GPUs the record lists (at least one), times :data:`HEADROOM` for what the
bounds leave out (an embedding row looked up rather than read, weights held in a cache,
speculative decoding). A mixture-of-experts counts the share its record gives (``extra.experts``,
or the active parameters its name states), else :data:`MOE_SHARE`. A model whose size is unknown,
and a serving test (a prefix cache, a remote fleet behind one URL), is held to
:data:`ABSOLUTE_RATE` only, which binds every test.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from pdx.domain.hardware.catalog import CATALOG_PATH
from pdx.domain.models import words as words_

HEADROOM = 4.0  # what the two bounds leave out (see above); far below a forgery's 100x
MOE_SHARE = 1 / 64  # a MoE whose record says no share: thinner than any routed model yet (1/31 at most)
MIN_SHARE = 1 / 256  # a share a record states is taken down to this, no further
MAX_BYTES_PER_PARAM = 4  # fp32: a file holding more per parameter holds more than the weights one token reads
ABSOLUTE_RATE = 1e9  # tokens/s: any test of any model, on anything
EARLIEST = datetime(2023, 1, 1, tzinfo=timezone.utc)  # before pdx and every tool it reads
LATEST_AHEAD = timedelta(days=1)  # a clock a day fast is a clock; a later date is no measurement yet
# A name that says the model routes to experts: Mixtral's 8x7B, Qwen's 30B-A3B, Llama 4's 17Bx16E.
_MOE_NAME = re.compile(r"moe|mixtral|experts|\d+x\d+(\.\d+)?[bm]|\bA\d+(\.\d+)?B\b|\d+[bm]x\d+e", re.I)


# -- dates ----------------------------------------------------------------------------------------------------

def date_problem(when: datetime) -> str | None:
    """Why a record's date (a parsed ISO 8601 time; one without a zone is UTC) cannot be a measurement's."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    try:
        if when < EARLIEST:
            return f"{when.isoformat()} is before {EARLIEST:%Y-%m-%d}, older than pdx and the tools it reads"
        if when > datetime.now(timezone.utc) + LATEST_AHEAD:
            return f"{when.isoformat()} is in the future (more than a day after now)"
    except OverflowError:  # at the edge of what datetime holds (year 1 or 9999 with a zone)
        return f"{when.isoformat()} is no date of a measurement"
    return None


# -- rates ----------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def fastest() -> tuple[float, float]:
    """(bytes/s, FLOP/s): the highest bandwidth and the highest FLOP/s of any chip in the catalog."""
    chips = json.loads(CATALOG_PATH.read_text())["chips"]
    bandwidth = max((c["bandwidth_gbs"]["value"] for c in chips if c.get("bandwidth_gbs")), default=0) * 1e9
    flops = max((f["value"] for c in chips for f in (c.get("tflops") or {}).values() if f), default=0) * 1e12
    return bandwidth, flops


@dataclass(frozen=True)
class Bounds:
    """The fastest a record's model can run on the fastest hardware pdx knows."""

    compute: float | None = None  # tokens/s, every token
    decode: float | None = None  # generated tokens/s of one sequence
    why_compute: str = ""
    why_decode: str = ""


def _positive(value: object) -> bool:
    return value.__class__ in (int, float) and math.isfinite(value) and value > 0


def _share(model: dict, n_params: float) -> float:
    """The least share of the model's parameters (and bytes) one token uses: 1 for a dense model."""
    extra = model.get("extra") if isinstance(model.get("extra"), dict) else {}
    experts = extra.get("experts")
    if isinstance(experts, dict):
        active, total = experts.get("active_params"), experts.get("total_params")
        return max(active / total, MIN_SHARE) if _positive(active) and _positive(total) and active <= total \
            else MOE_SHARE
    words = " ".join(str(v) for v in (model.get("architecture"), model.get("name"), extra.get("model_type"))
                     if isinstance(v, str))
    if isinstance(extra.get("model_type"), str):
        try:
            said = words_.parse(extra["model_type"], n_params or None)
        except (ValueError, TypeError, ZeroDivisionError):
            said = None
        if said is not None and said.moe:
            if said.active_params and n_params and said.active_params <= n_params:
                return max(said.active_params / n_params, MIN_SHARE)
            return MOE_SHARE
    if _MOE_NAME.search(words) or any(a in words.lower().replace("_", "-") for a in _moe_architectures()):
        return MOE_SHARE
    return 1.0


@lru_cache(maxsize=1)
def _moe_architectures() -> tuple[str, ...]:
    return tuple(words_.facts()["moe_architectures"])


def bounds(model: object, hardware: object) -> Bounds:
    """The bounds of a record's model on the fastest chips, as many as the record lists GPUs."""
    if not isinstance(model, dict):
        return Bounds()
    gpus = hardware.get("gpus") if isinstance(hardware, dict) else None
    devices = max(len(gpus) if isinstance(gpus, list) else 0, 1)
    n_params = model.get("n_params") if _positive(model.get("n_params")) else 0
    file_bytes = model.get("file_bytes") if _positive(model.get("file_bytes")) else 0
    share = _share(model, n_params)
    bandwidth, flops = fastest()
    scale = HEADROOM * devices
    on = f"{devices} x " if devices > 1 else ""
    compute = why_compute = None
    if n_params and flops:
        compute = flops * scale / (2 * n_params * share)
        why_compute = (f"{on}{flops / 1e12:g} TFLOP/s x {HEADROOM:g} / {2 * n_params * share:.3g} FLOPs a token")
    decode = why_decode = None
    weights = min(file_bytes, MAX_BYTES_PER_PARAM * n_params) if n_params else file_bytes
    if weights and bandwidth:
        decode = bandwidth * scale / (weights * share)
        why_decode = f"{on}{bandwidth / 1e12:g} TB/s x {HEADROOM:g} / {weights * share / 1e9:.3g} GB a step"
    return Bounds(compute, decode, why_compute or "", why_decode or "")


def _observation(kind: str, batch: int, prompt: int, generated: int, ns: float, gen_ns: float | None,
                 limits: Bounds) -> str | None:
    """Why tokens in a time cannot be: ``prompt`` and ``generated`` tokens (all sequences) in ``ns``,
    the generated ones in ``gen_ns`` where timed apart."""
    rate = (prompt + generated) * 1e9 / ns
    if rate > ABSOLUTE_RATE:
        return f"{rate:.4g} t/s is faster than any benchmark of any model (at most {ABSOLUTE_RATE:.0e} t/s)"
    if kind == "serve":
        return None
    if limits.compute and rate > limits.compute:
        return (f"{rate:.4g} t/s is faster than the fastest chip pdx knows could compute this model "
                f"(at most {limits.compute:.4g} t/s: {limits.why_compute})")
    if generated and limits.decode:
        rate = generated * 1e9 / (gen_ns if gen_ns else ns)
        if rate > limits.decode * batch:
            return (f"{rate:.4g} t/s of decode is faster than the fastest chip pdx knows could read this model "
                    f"(at most {limits.decode * batch:.4g} t/s: {f'{batch} x ' if batch > 1 else ''}"
                    f"{limits.why_decode})")
    return None


def _count(value: object) -> int:
    return value if value.__class__ is int and value > 0 else 0


def rate_problem_of_test(test: dict, limits: Bounds = Bounds()) -> tuple[str, str] | None:
    """(where in the test, why) for the first rate of a test (a record's ``tests`` entry, schema-checked)
    that no hardware pdx knows could reach; None when every one could."""
    kind = test.get("kind")
    batch = max(_count(test.get("batch")), 1)
    prompt, generated = _count(test.get("n_prompt")) * batch, _count(test.get("n_gen")) * batch
    if kind == "serve":
        prompt = generated = 0  # a serving test's counts are per request; its samples hold the totals
    for i, sample in enumerate(test.get("samples") or ()):
        if not isinstance(sample, dict) or not _positive(sample.get("ns")):
            continue
        gen_ns = sample.get("gen_ns") if _positive(sample.get("gen_ns")) else None
        problem = _observation(kind, batch, max(prompt, _count(sample.get("n_prompt"))),
                               max(generated, _count(sample.get("n_gen"))), sample["ns"], gen_ns, limits)
        if problem:
            return f".samples[{i}]", problem
    reported = (test.get("engine") or {}).get("reported") if isinstance(test.get("engine"), dict) else None
    mean = reported.get("mean") if isinstance(reported, dict) else None
    if _positive(mean) and prompt + generated and kind != "serve":
        problem = _observation(kind, batch, prompt, generated, (prompt + generated) * 1e9 / mean, None, limits)
        if problem:
            return ".engine.reported.mean", problem.replace("t/s", "t/s reported", 1)
    return None


def rate_problem(record: dict) -> tuple[str, str] | None:
    """(where in the record, why) for the first rate of a run (schema-checked) that no hardware pdx
    knows could reach with its model; None when every one could."""
    limits = bounds(record.get("model"), record.get("hardware"))
    for i, test in enumerate(record.get("tests") or ()):
        if isinstance(test, dict):
            problem = rate_problem_of_test(test, limits)
            if problem:
                return f"tests[{i}]{problem[0]}", problem[1]
    return None
