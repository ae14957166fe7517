"""The test matrix, in llama-bench's vocabulary.

``-p 512,1024 -n 128 -d 0,4096 -b 1,8`` expands to named tests: ``pp512``
(prefill 512 tokens), ``tg128`` (128 single-token decode steps),
``pp512+tg128`` (both in one request), each optionally ``@d4096`` (after 4096
tokens already sit in the KV cache, filled untimed) and ``/b8`` (8 sequences at
once). Lists accept llama-bench's syntax: ``512,1024``, ranges ``128-512``,
``first-last+step`` and ``first-last*factor``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from pdx.contract.errors import PdxError, WorkloadError
from pdx.contract.numbers import MAX_BATCH, MAX_TOKENS, parse_float
from pdx.domain.prompt_stream import VERSION as PROMPT_STREAM_VERSION

_NAME = re.compile(
    r"^(?:pp(?P<pp>\d+))?(?:\+)?(?:tg(?P<tg>\d+))?(?:@d(?P<depth>\d+))?(?:/b(?P<batch>\d+))?$", re.ASCII
)
_RANGE = re.compile(r"^(?P<first>\d+)-(?P<last>\d+)(?:(?P<op>[+*])(?P<step>\d+))?$", re.ASCII)

# A guard against typos such as -p 1-1000000+1 that would expand to a million tests.
MAX_VALUES = 1024
# Tokens, depths, threads, concurrency: no list value is ever larger (pdx.contract.numbers holds the bounds).
MAX_LIST_VALUE = MAX_TOKENS
# Adaptive runs stop here at the latest; the first batch when -r is 'auto'.
DEFAULT_MAX_REPETITIONS = 30
AUTO_FIRST_BATCH = 3
DEFAULT_TARGET_CI = 0.02


def repetition_tokens(test) -> int:
    """Tokens one repetition of a pp/tg test processes, all sequences of its batch together: of a
    stored test (a dict) or a :class:`~pdx.domain.workload.TestSpec`."""
    get = test.get if isinstance(test, dict) else lambda key, default=None: getattr(test, key, default)
    return (get("n_prompt") + get("n_gen")) * (get("batch", 1) or 1)


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

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "n_prompt": self.n_prompt,
            "n_gen": self.n_gen,
            "depth": self.depth,
            "batch": self.batch,
        }


def parse_int_list(text: str | int, flag: str, minimum: int = 0, maximum: int | None = None) -> list[int]:
    """Parse llama-bench's list syntax: ``1,2``, ``128-512``, ``128-512+128``, ``128-512*2``; every value
    within [minimum, maximum] (default: :data:`MAX_LIST_VALUE`), in ASCII digits."""
    maximum = MAX_LIST_VALUE if maximum is None else maximum
    values: list[int] = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            raise WorkloadError(f"{flag}: empty item in {text!r}; give numbers like 128,512")
        if len(item) > 40:
            raise WorkloadError(f"{flag}: {item[:20]!r}... is too long to be a number or range")
        if item.isascii() and item.isdigit():
            values.append(int(item))
        elif match := _RANGE.match(item):
            first, last = int(match["first"]), int(match["last"])
            if last > maximum:
                raise WorkloadError(f"{flag}: {last} is above the maximum of {maximum}")
            op, step = match["op"] or "+", int(match["step"] or 1)
            if last < first or (op == "+" and step < 1) or (op == "*" and (step < 2 or first < 1)):
                raise WorkloadError(f"{flag}: range {item!r} never reaches its end")
            value = first
            while value <= last:
                values.append(value)
                value = value + step if op == "+" else value * step
                if len(values) > MAX_VALUES:
                    raise WorkloadError(f"{flag}: {item!r} expands to over {MAX_VALUES} values")
        else:
            raise WorkloadError(
                f"{flag}: {item!r} is not a non-negative number or range "
                "(use e.g. 512, 128,512, 128-512+128 or 128-1024*2)"
            )
    for value in values:
        if value < minimum:
            raise WorkloadError(f"{flag}: {value} is below the minimum of {minimum}")
        if value > maximum:
            shown = value if value < 10**24 else f"a {len(str(value))}-digit number"
            raise WorkloadError(f"{flag}: {shown} is above the maximum of {maximum}")
    return values


def parse_pairs(text: str, flag: str) -> list[tuple[int, int]]:
    """Parse ``-pg 512,128`` (one pair) or ``512,128;1024,256`` (several)."""
    pairs = []
    for chunk in text.split(";"):
        values = parse_int_list(chunk, flag)
        if len(values) != 2:
            raise WorkloadError(f"{flag}: expected PROMPT,GEN pairs such as 512,128; got {chunk!r}")
        pairs.append((values[0], values[1]))
    return pairs


@dataclass(frozen=True)
class Workload:
    """What a run measures: the tests, and how often each is repeated.

    With ``target_ci`` set, ``repetitions`` is the first batch: the runner
    then repeats each test until the 95% CI half-width of its rate is within
    ``target_ci`` of the mean (0.02: 2%) or ``max_repetitions`` is reached.
    """

    tests: tuple  # of TestSpec, or pdx.domain.serving.spec.ServeSpec for serving scenarios
    repetitions: int = 5
    warmup: int = 1
    seed: int = 42
    labels: dict = field(default_factory=dict, compare=False)
    target_ci: float | None = None
    max_repetitions: int = DEFAULT_MAX_REPETITIONS

    def __post_init__(self) -> None:
        if not self.tests:
            raise WorkloadError("no tests selected; give -p and/or -n with a value above 0")
        if self.repetitions < 1:
            raise WorkloadError(f"-r: repetitions must be at least 1, not {self.repetitions}")
        if self.warmup < 0:
            raise WorkloadError(f"--warmup cannot be negative ({self.warmup})")
        if self.target_ci is not None:
            if not 0 < self.target_ci < 1:
                raise WorkloadError(f"--target-ci must be between 0% and 100%, not {self.target_ci:.1%}")
            if self.repetitions < 2:
                raise WorkloadError("-r: an adaptive run needs a first batch of at least 2 repetitions")
            if self.max_repetitions < self.repetitions:
                raise WorkloadError(f"--max-repetitions {self.max_repetitions} is below -r {self.repetitions}")

    def to_dict(self) -> dict:
        data = {
            # pp/tg tests by name; serving scenarios (pdx.domain.serving.spec) by their parameters
            "tests": [t.name if isinstance(t, TestSpec) else t.to_dict() for t in self.tests],
            "repetitions": self.repetitions,
            "warmup": self.warmup,
            "seed": self.seed,
            # the version of the prompt stream the seed was drawn from (pdx.domain.prompt_stream): the same seed
            # and version give every engine the same token ids
            "prompts": PROMPT_STREAM_VERSION,
        }
        if self.target_ci is not None:
            data |= {"target_ci": self.target_ci, "max_repetitions": self.max_repetitions}
        return data

    @classmethod
    def from_dict(cls, data: dict, scenario: Callable[[dict], object] | None = None) -> "Workload":
        """A stored workload; ``scenario`` reads a serving scenario's parameters back (a workload of
        pp/tg tests needs none): :func:`pdx.domain.serving.workloads.stored_workload` reads either."""

        def test(stored):
            if isinstance(stored, str):
                return TestSpec.parse(stored)
            if scenario is None:
                raise WorkloadError("a serving scenario in a pp/tg workload: read it with "
                                    "pdx.domain.serving.workloads.stored_workload")
            return scenario(stored)

        return cls(
            tests=tuple(test(t) for t in data["tests"]),
            repetitions=int(data["repetitions"]),
            warmup=int(data["warmup"]),
            seed=int(data["seed"]),
            target_ci=data.get("target_ci"),
            max_repetitions=int(data.get("max_repetitions", DEFAULT_MAX_REPETITIONS)),
        )


def parse_target_ci(text: str) -> float:
    """``2%`` or ``0.02`` as a fraction."""
    value = text.strip()
    try:
        number = parse_float(value.removesuffix("%"), "--target-ci", minimum=0.0)
    except PdxError:
        raise WorkloadError(f"--target-ci: {text!r} is not a percentage such as 2% or 0.02") from None
    return number / 100 if value.endswith("%") else number


@dataclass(frozen=True, kw_only=True)
class BenchOptions:
    """What ``pdx bench`` was asked for its test matrix, by name (llama-bench's flags as given: lists in
    text), so that no two adjacent numbers can be swapped unnoticed on the way to the workload."""

    n_prompt: str = "512"
    n_gen: str = "128"
    prompt_gen: str | None = None
    depth: str = "0"
    batch: str = "1"
    repetitions: int = 5
    warmup: int = 1
    seed: int = 42
    target_ci: float | None = None
    max_repetitions: int = DEFAULT_MAX_REPETITIONS

    def workload(self) -> Workload:
        """The ordered test matrix. The order follows llama-bench: for each batch and depth, the pp
        tests, then tg, then pp+tg."""
        prompts = [p for p in parse_int_list(self.n_prompt, "-p") if p > 0]
        gens = [n for n in parse_int_list(self.n_gen, "-n") if n > 0]
        pairs = parse_pairs(self.prompt_gen, "-pg") if self.prompt_gen else []
        depths = parse_int_list(self.depth, "-d")
        batches = parse_int_list(self.batch, "-b", minimum=1, maximum=MAX_BATCH)
        tests: list[TestSpec] = []
        for b in dict.fromkeys(batches):
            for d in dict.fromkeys(depths):
                tests += [TestSpec(p, 0, d, b) for p in dict.fromkeys(prompts)]
                tests += [TestSpec(0, n, d, b) for n in dict.fromkeys(gens)]
                tests += [TestSpec(p, n, d, b) for p, n in dict.fromkeys(pairs)]
        return Workload(tuple(tests), repetitions=self.repetitions, warmup=self.warmup, seed=self.seed,
                        target_ci=self.target_ci, max_repetitions=self.max_repetitions)


def build_workload(**options) -> Workload:
    """The workload of :class:`BenchOptions` given by name (none: pdx bench's defaults)."""
    return BenchOptions(**options).workload()
