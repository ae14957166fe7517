"""One timed test, in llama-bench's vocabulary: ``pp512`` (prefill 512 tokens), ``tg128`` (128
single-token decode steps), ``pp512+tg128`` (both in one request), each optionally ``@d4096`` (after
4096 tokens already sit in the KV cache, filled untimed) and ``/b8`` (8 sequences at once). What a
backend is handed (:meth:`pdx.contract.backend.Backend.run`); a workload's matrix of them is
:mod:`pdx.domain.workload`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from pdx.contract.errors import WorkloadError

_NAME = re.compile(
    r"^(?:pp(?P<pp>\d+))?(?:\+)?(?:tg(?P<tg>\d+))?(?:@d(?P<depth>\d+))?(?:/b(?P<batch>\d+))?$", re.ASCII
)


def repetition_tokens(test: "TestSpec | Mapping[str, Any]") -> int:
    """Tokens one repetition of a pp/tg test processes, all sequences of its batch together: of a
    stored test (a dict) or a :class:`TestSpec`."""
    counts: tuple[Any, Any, Any]
    if isinstance(test, Mapping):
        counts = test.get("n_prompt"), test.get("n_gen"), test.get("batch", 1)
    else:
        counts = test.n_prompt, test.n_gen, getattr(test, "batch", 1)
    n_prompt, n_gen, batch = counts
    return int((n_prompt + n_gen) * (batch or 1))


@dataclass(frozen=True, order=True)
class TestSpec:
    """One timed test: prefill ``n_prompt`` and/or decode ``n_gen`` tokens."""

    __test__ = False  # not a pytest test class, despite the name

    n_prompt: int
    n_gen: int
    depth: int = 0
    batch: int = 1

    def __post_init__(self) -> None:
        if self.n_prompt < 0 or self.n_gen < 0 or self.depth < 0:
            raise WorkloadError(f"test {self.name}: token counts cannot be negative")
        if self.n_prompt == 0 and self.n_gen == 0:
            raise WorkloadError("a test needs prompt or generated tokens (both were 0)")
        if self.batch < 1:
            raise WorkloadError(f"batch must be at least 1, not {self.batch}")

    @property
    def kind(self) -> str:
        if self.n_gen == 0:
            return "pp"
        if self.n_prompt == 0:
            return "tg"
        return "pg"

    @property
    def base_name(self) -> str:
        if self.kind == "pp":
            return f"pp{self.n_prompt}"
        if self.kind == "tg":
            return f"tg{self.n_gen}"
        return f"pp{self.n_prompt}+tg{self.n_gen}"

    @property
    def name(self) -> str:
        name = self.base_name
        if self.depth:
            name += f"@d{self.depth}"
        if self.batch > 1:
            name += f"/b{self.batch}"
        return name

    @property
    def tokens(self) -> int:
        """Tokens processed by one repetition, over all sequences of the batch."""
        return repetition_tokens(self)

    def expected_tokens(self) -> tuple[int, int]:
        """(prompt, generated) tokens every sample must report, all sequences together."""
        return self.n_prompt * self.batch, self.n_gen * self.batch

    @property
    def context(self) -> int:
        """KV-cache cells one sequence needs."""
        return self.depth + self.n_prompt + self.n_gen

    @classmethod
    def parse(cls, name: str) -> "TestSpec":
        match = _NAME.match(name.strip())
        if not match or not (match["pp"] or match["tg"]):
            raise WorkloadError(
                f"cannot read test name {name!r}; expected e.g. pp512, tg128, pp512+tg128@d4096/b8"
            )
        return cls(
            n_prompt=int(match["pp"] or 0),
            n_gen=int(match["tg"] or 0),
            depth=int(match["depth"] or 0),
            batch=int(match["batch"] or 1),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "n_prompt": self.n_prompt,
            "n_gen": self.n_gen,
            "depth": self.depth,
            "batch": self.batch,
        }
