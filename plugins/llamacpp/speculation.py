"""llama-server's speculative decoding: the flags pdx passes for its ``-o`` options, and what a run
records of it, read back from the command the server was started with (so flags given through
``-o server_args`` count the same).

Methods are llama-server's ``--spec-type`` names: ``draft-simple`` (a draft model, ``-md``),
``draft-eagle3``, ``draft-mtp``, the ``ngram-*`` lookups (no draft model: they draft from the
text so far, and gain only where it repeats). ``--spec-synth-len L`` makes llama-server accept
drafts at a set mean length whatever the draft says: a test of the machinery, not of a draft,
and recorded as such.
"""

from __future__ import annotations

from typing import Mapping

from pdx.contract.errors import PdxError
from pdx.domain.speculation import NGRAM_NOTE, counts_of

OPTIONS = {
    "draft_model": "speculative decoding: the draft model (GGUF) llama-server drafts with (--spec-draft-model)",
    "spec_type": "speculative decoding method (--spec-type: draft-simple, ngram-simple, ngram-mod, ...; "
                 "default draft-simple with a draft model)",
    "draft_max": "speculative decoding: most tokens drafted at a time (--spec-draft-n-max)",
    "spec_synth_len": "speculative decoding: llama-server's synthetic acceptance, a mean accepted length "
                      "(--spec-synth-len; tests the machinery, not a draft)",
}

# flag -> (the record's key, how its value reads)
_FLAGS = {
    "--spec-type": ("method", str),
    "--spec-draft-model": ("draft_model", str), "-md": ("draft_model", str), "--model-draft": ("draft_model", str),
    "--spec-draft-n-max": ("draft_max", int),
    "--spec-draft-n-min": ("draft_min", int),
    "--spec-draft-p-min": ("draft_p_min", float), "--draft-p-min": ("draft_p_min", float),
    "--spec-synth-len": ("synthetic_accept_length", float),
    "--spec-ngram-simple-size-n": ("ngram_size_n", int), "--spec-ngram-simple-size-m": ("ngram_size_m", int),
    "--spec-ngram-mod-n-match": ("ngram_match", int),
}

_OPTION_FLAGS = {"draft_model": "--spec-draft-model", "spec_type": "--spec-type", "draft_max": "--spec-draft-n-max",
                 "spec_synth_len": "--spec-synth-len"}


def flags(options: Mapping[str, str]) -> list[str]:
    """llama-server flags for the speculation options given with ``-o``. A draft model alone means
    ``--spec-type draft-simple``: llama-server loads a draft without it and drafts nothing."""
    given = {key: str(options[key]) for key in _OPTION_FLAGS if options.get(key) not in (None, "")}
    if "draft_model" in given:
        given.setdefault("spec_type", "draft-simple")
    return [part for key, value in given.items() for part in (_OPTION_FLAGS[key], value)]


def read(command: list[str]) -> dict | None:
    """What a llama-server command line sets of speculation (None: it does not speculate). The draft
    model's path stays a path here; the backend replaces it with the model's identity."""
    found: dict = {}
    for i, arg in enumerate(command[:-1]):
        flag, _, inline = arg.partition("=")
        if flag not in _FLAGS:
            continue
        key, kind = _FLAGS[flag]
        value = inline if inline else command[i + 1]
        try:
            found[key] = kind(value)
        except ValueError:
            words = "a whole number" if kind is int else "a number"
            raise PdxError(f"llama-server flag {flag} {value!r} is not {words}", "check -o server_args") from None
    if found.get("method") == "none":
        return None
    if "method" not in found:
        if "draft_model" not in found:
            return None
        found["method"] = None  # a draft model loaded, and no --spec-type: this llama-server's default decides
        found["note"] = "no --spec-type: the server's default method (none in recent llama-server builds)"
    if str(found["method"] or "").startswith("ngram"):
        found["note"] = NGRAM_NOTE
    if "synthetic_accept_length" in found:
        found["note"] = "acceptance set by llama-server's --spec-synth-len, not by the draft"
    return found


def counts(timings: list[dict]) -> dict | None:
    """A speculating llama-server's drafted, accepted and generated tokens over requests' ``timings``.
    Its ``server_slot_stats::to_json`` writes ``draft_n`` and ``draft_n_accepted`` only once the slot has
    drafted (``n_draft_tokens > 0``): a request whose timings lack them drafted nothing, which counts as
    0 here rather than as a request that says nothing. None where no request has its timings."""
    drafted = accepted = tokens = 0
    seen = False
    for figures in timings:
        values = counts_of(figures.get(key, default) for key, default in
                           (("draft_n", 0), ("draft_n_accepted", 0), ("predicted_n", None)))
        if values is None:
            continue
        seen = True
        drafted, accepted, tokens = drafted + values[0], accepted + values[1], tokens + values[2]
    return {"drafted": drafted, "accepted": min(accepted, drafted), "tokens": tokens} if seen else None
