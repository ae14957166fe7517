"""mlx-lm's speculative decoding: the ``-o`` options that turn it on, what a run records of it, and
what each repetition drafted and accepted, counted from mlx-lm's own loop.

mlx-lm speculates with a draft model only (``speculative_generate_step``: the draft proposes
``num_draft_tokens`` tokens, one forward pass of the target verifies them all), and for one
sequence only: its ``batch_generate`` has no draft, so a batched test with a draft is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from pdx.contract.backend import Option
from pdx.contract.errors import ModelError, PdxError
from pdx.domain.models import ModelInfo, identify
from pdx.domain.speculation import draft_record

# mlx_lm.generate's and mlx_lm.server's own default (speculative_generate_step's bare default, 2, is
# what neither of mlx-lm's commands uses)
DEFAULT_DRAFT_TOKENS = 3
OPTIONS = {
    "draft_model": "speculative decoding: the draft model mlx-lm drafts with (an MLX or Hugging Face model "
                   "directory with the target's vocabulary)",
    "num_draft_tokens": Option(help="speculative decoding: tokens the draft proposes per pass of the target "
                                    "(as mlx-lm's --num-draft-tokens)", default=DEFAULT_DRAFT_TOKENS, kind="int",
                               minimum=1),  # at least one: a draft of nothing is no speculation
}
METHOD = "draft-model"


@dataclass(frozen=True)
class Speculation:
    """What ``-o`` asks of speculation: the draft model's path and the tokens drafted per target pass."""

    draft_model: str
    num_draft_tokens: int = DEFAULT_DRAFT_TOKENS


def from_options(options: dict, num_draft_tokens: int) -> Speculation | None:
    """The speculation ``-o draft_model`` (and ``num_draft_tokens``, read) ask for; None without a draft."""
    draft = options.get("draft_model", "")
    if not draft:
        if options.get("num_draft_tokens") not in (None, ""):
            raise PdxError("-o num_draft_tokens needs a draft model to draft with",
                           "add -o draft_model=DIR (an MLX or Hugging Face model directory)")
        return None
    return Speculation(draft, num_draft_tokens)


def draft_info(spec: Speculation, target: ModelInfo) -> ModelInfo:
    """The draft model's identity, refused where its token ids cannot mean the target's (another
    vocabulary: every draft would be compared with a different token)."""
    try:
        draft = identify(spec.draft_model)
    except (ModelError, OSError) as exc:
        raise PdxError(f"cannot read the draft model {spec.draft_model}: {getattr(exc, 'message', exc)}",
                       "give an MLX or Hugging Face model directory with -o draft_model=DIR") from None
    if draft.n_vocab and target.n_vocab and draft.n_vocab != target.n_vocab:
        raise ModelError(f"-o draft_model={spec.draft_model}: its vocabulary ({draft.n_vocab:,} tokens) is not "
                         f"the target's ({target.n_vocab:,})", "give a draft model with the target's tokenizer")
    return draft


def record(spec: Speculation, draft: ModelInfo) -> dict:
    """What a run records of speculation (``engine.settings["speculation"]``): the draft by its
    identity, not its path alone (the shape llama-server's runs record)."""
    return {"method": METHOD, "draft_model": draft_record(draft), "num_draft_tokens": spec.num_draft_tokens}


def refused_batch(batch: int) -> PdxError | None:
    """Why a test of ``batch`` sequences cannot speculate, or None where it can."""
    if batch == 1:
        return None
    return PdxError(f"-o draft_model: mlx-lm drafts for one sequence only (batch_generate has no speculative "
                    f"decoding), not for batch {batch}", "drop -o draft_model, or run the batched tests with -b 1")


def counts(from_draft: Iterable[bool], max_tokens: int, num_draft_tokens: int) -> dict:
    """What one ``speculative_generate_step`` of ``max_tokens`` tokens drafted and accepted, from the
    ``from_draft`` flag of each token it yielded, in order.

    Its loop drafts in rounds: ``min(num_draft_tokens, tokens still to make)`` draft tokens, one
    target pass over them, then it yields the drafts the target agrees with (``from_draft`` true)
    and the target's own next token (false), unless the last token is among the accepted drafts.
    So a round ends at a token of the target's own, and the next token opens the next round; the
    count of drafts is the loop's own, not a guess from the tokens accepted."""
    drafted = accepted = tokens = 0
    in_round = False
    for flag in from_draft:
        if not in_round:
            drafted += min(num_draft_tokens, max_tokens - tokens)
            in_round = True
        tokens += 1
        accepted += bool(flag)
        in_round = bool(flag)
    return {"drafted": drafted, "accepted": accepted, "tokens": tokens}
