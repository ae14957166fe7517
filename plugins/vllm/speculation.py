"""vLLM's speculative decoding: the ``-o speculative_config`` option that turns it on for a server pdx
starts, what a run records of it (read back from the command the server was started with, so
``--server-args "--speculative-config ..."`` counts the same), and what each sample drafted and
accepted, from the server's own counters in /metrics.

vLLM takes one JSON object (``--speculative-config``): ``method`` (``ngram``, ``draft_model``,
``eagle``, ``eagle3``, ``mtp``, ``suffix``...), ``num_speculative_tokens``, a draft ``model``, and
for n-gram lookup ``prompt_lookup_min`` / ``prompt_lookup_max``. Its Prometheus counters
``vllm:spec_decode_num_draft_tokens`` and ``vllm:spec_decode_num_accepted_tokens`` count what the
engine drafted and accepted; they are per engine, not per request, so a sample's counts are their
change over that sample (one request at a time in pdx's pp/tg tests).
"""

from __future__ import annotations

import json
from pathlib import Path

from pdx.contract.errors import PdxError
from pdx.domain.speculation import NGRAM_NOTE, draft_identity

OPTIONS = {
    "speculative_config": "speculative decoding: vLLM's --speculative-config JSON, e.g. "
                          '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}',
}
FLAGS = ("--speculative-config", "--speculative_config")
# pdx name -> vLLM's counter, scraped before and after each sample
COUNTERS = {
    "spec_decode_drafts": "vllm:spec_decode_num_drafts_total",
    "spec_decode_draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "spec_decode_accepted_tokens": "vllm:spec_decode_num_accepted_tokens_total",
}
# the record's name for each key of the config (the same names llama-server's runs record)
_RECORDED = {"num_speculative_tokens": "draft_max", "prompt_lookup_min": "ngram_min",
             "prompt_lookup_max": "ngram_max", "model": "draft_model"}


def flags(options: dict) -> list[str]:
    """The server flags ``-o speculative_config`` asks for (checked: a JSON object)."""
    given = options.get("speculative_config")
    if given in (None, ""):
        return []
    _config(given, "-o speculative_config")
    return [FLAGS[0], given]


def _config(text: str, where: str) -> dict:
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise PdxError(f"{where}: not JSON ({exc})", "give a JSON object, e.g. "
                       '\'{"method": "ngram", "num_speculative_tokens": 3}\'') from None
    if not isinstance(config, dict):
        raise PdxError(f"{where}: give a JSON object, not {type(config).__name__}",
                       'e.g. \'{"method": "ngram", "num_speculative_tokens": 3}\'')
    return config


def read(command: list[str]) -> dict | None:
    """What a ``vllm serve`` command line sets of speculation (None: it does not speculate)."""
    given = None
    for i, arg in enumerate(command):
        flag, sep, inline = arg.partition("=")
        if flag in FLAGS:
            given = inline if sep else (command[i + 1] if i + 1 < len(command) else "")
    if given is None:
        return None
    return recorded(_config(given, f"{FLAGS[0]} {given!r}"))


def recorded(config: dict | None) -> dict | None:
    """What a run records of a speculative config (None: an empty one, no speculation); a draft model
    on this machine by its identity, one vLLM fetches by name as that name."""
    if not config:
        return None
    found = {"method": config.get("method") or ("draft_model" if config.get("model") else None)}
    found |= {_RECORDED[key]: value for key, value in config.items() if key in _RECORDED}
    if found.get("draft_model") and Path(found["draft_model"]).exists():
        found["draft_model"] = draft_identity(found["draft_model"])
    if str(found["method"] or "").startswith("ngram"):
        found["note"] = NGRAM_NOTE
    return found


def offline_config(engine_args: dict) -> dict | None:
    """``vllm.LLM``'s ``speculative_config`` among ``-o engine_args`` (checked: an object), or None."""
    config = engine_args.get("speculative_config")
    if config is not None and not isinstance(config, dict):
        raise PdxError("-o engine_args: speculative_config must be a JSON object",
                       'e.g. {"speculative_config": {"method": "ngram", "num_speculative_tokens": 3}}')
    return config or None


def counts(figures: dict, speculating: bool) -> dict | None:
    """A sample's drafted and accepted tokens from the change of vLLM's counters over it, and the
    tokens it generated; None where the server counted none and the run does not speculate."""
    drafted = figures.get("spec_decode_draft_tokens")
    if drafted is None or not (speculating or drafted):
        return None
    return {"drafted": round(drafted), "accepted": round(figures.get("spec_decode_accepted_tokens") or 0),
            "tokens": round(figures.get("generation_tokens") or 0)}
