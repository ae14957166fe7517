"""The backend contract: what every engine plugin implements.

A backend is a class registered through the ``pdx_register_backends`` hook.
The runner drives it the same way for every engine::

    with Backend(config) as backend:
        info = backend.load(model)             # load weights, resolve settings
        for test in workload.tests:
            for sample in backend.run(test, repetitions, warmup):
                ...                            # one Sample per counted repetition

Semantics every backend keeps (see the README's "What pdx measures"):

- ``run`` yields exactly ``repetitions`` samples; warm-up runs are never yielded.
- A sample times only the test itself: depth (``test.depth`` tokens already in
  the KV cache) is filled before the clock starts, for every repetition.
- Prefill ends when the last prompt token's logits exist; decode is
  ``n_gen`` sequential single-token steps per sequence, ignoring EOS, so every
  repetition processes exactly the tokens the test names.
- The engine's own figures, where it has them, go in ``Sample.engine``, never
  in place of pdx's clock.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Iterator, Mapping

from pdx.contract import build, record
from pdx.contract.errors import PdxError
from pdx.contract.numbers import parse_int, quoted

from pdx.contract.model import ModelInfo
from pdx.contract.test_spec import TestSpec

if TYPE_CHECKING:
    from pdx.contract.request import RequestRecord


@dataclass(frozen=True)
class Availability:
    """Whether a backend can run here, and if not, why and how to fix it."""

    available: bool
    reason: str = ""
    install: str = ""
    version: str | None = None


@dataclass
class Sample:
    """One counted repetition of a test."""

    ns: int  # wall time of the timed part, nanoseconds
    n_prompt: int = 0  # prompt tokens processed, all sequences together
    n_gen: int = 0  # tokens generated, all sequences together
    prompt_ns: int | None = None  # the prefill part of a pp+tg test
    gen_ns: int | None = None  # the decode part of a pp+tg test
    engine: dict[str, Any] = field(default_factory=dict)  # the engine's own figures (JSON: mlx nests speculation's)
    requests: list["RequestRecord"] = field(default_factory=list)  # serving backends: every request sent
    # When the timed part ended, on time.monotonic_ns()'s clock: energy meters read the window
    # [ended_ns - ns, ended_ns]. A backend that yields a sample as soon as it is timed leaves it None
    # (the runner stamps it); one that hands over a batch at once (a subprocess) sets it. Not stored.
    ended_ns: int | None = field(default=None, compare=False)
    # Serving: when its (first) load run's clock started, on time.perf_counter_ns()'s clock, so what
    # was read beside the requests (the server's series) is put on their clock. Not stored.
    origin_ns: int | None = field(default=None, compare=False)
    # Figures the record declares for a sample beyond these (a field of pdx.contract.record.Sample added
    # with its migration), by name: stored in their columns, summarised and shown from the declaration.
    figures: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def timed(cls, test: "TestSpec", t0: int, t1: int, t2: int, engine: dict[str, Any] | None = None) -> "Sample":
        """A repetition of ``test`` that started at ``t0``, ended prefill at ``t1`` and decode at
        ``t2`` (ns); the phase split is kept for pp+tg tests, the only ones with two phases."""
        both = test.kind == "pg"
        return cls(ns=t2 - t0, n_prompt=test.n_prompt * test.batch, n_gen=test.n_gen * test.batch,
                   prompt_ns=t1 - t0 if both else None, gen_ns=t2 - t1 if both else None, engine=engine or {})

    def to_dict(self) -> dict[str, Any]:
        return {
            "ns": self.ns,
            "n_prompt": self.n_prompt,
            "n_gen": self.n_gen,
            "prompt_ns": self.prompt_ns,
            "gen_ns": self.gen_ns,
            "engine": dict(self.engine),
            **self.figures,
            "requests": [r.to_dict() for r in self.requests],
        }

    def to_record(self) -> record.Sample:
        """This repetition as stored (its requests are stored beside it, with the test)."""
        return build.sample(self.ns, self.n_prompt, self.n_gen, self.prompt_ns, self.gen_ns, self.engine,
                            **self.figures)


# The fields a stored sample has beyond Sample's own: figures a backend gives by name (Sample.figures), each
# summarised over a test's samples (pdx.domain.stats.derived) and shown with its description, all from its
# declaration in pdx.contract.record.Sample: a new one is that line and its migration.
FIGURES: tuple[record.Field, ...] = tuple(f for f in record.fields(record.Sample)
                                          if f.name not in Sample.__dataclass_fields__)


@dataclass
class EngineInfo:
    """What a loaded backend reports about the engine and its settings."""

    engine: str
    version: str | None = None
    commit: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # resolved: threads, batch sizes, flash attention...
    details: dict[str, Any] = field(default_factory=dict)  # anything else worth keeping (system info...)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "version": self.version,
            "commit": self.commit,
            "settings": dict(self.settings),
            "details": dict(self.details),
        }


@dataclass(frozen=True, kw_only=True)  # by name: a copy made field by field loses what it forgets (the key)
class BackendConfig:
    """Settings the user chose for one run; a variant of one is ``dataclasses.replace(config, ...)``."""

    threads: int | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    seed: int = 42
    api_key: str | None = field(default=None, repr=False)  # sent to servers, never stored or shown


@dataclass(frozen=True, kw_only=True)
class Option:
    """An engine option a backend declares for ``-o KEY=VALUE``, typed: its help, its default (None:
    unset, the engine's own), and how its text is read: ``kind`` "int" (``minimum``/``maximum``),
    "choice" (``choices`` maps each accepted text, lower case, to its value) or "text". pdx reads
    every given value before the backend is made (:func:`read_options`), so a bad one is a one-line
    error naming the option whatever the backend; a plain help string declares a text option."""

    help: str
    default: object = None
    kind: str = "text"
    minimum: int | None = None
    maximum: int = 2**31 - 1  # an engine's 32-bit int
    choices: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in ("text", "int", "choice") or (self.kind == "choice") != bool(self.choices):
            raise PdxError(f"option kind {self.kind!r}: use text, int, or choice with its choices")

    def read(self, key: str, text: str) -> object:
        if self.kind == "int":
            return parse_int(text, f"-o {key}", self.minimum, self.maximum)
        if self.kind == "choice":
            if text.strip().lower() not in self.choices:
                raise PdxError(f"-o {key}: {quoted(text)} is not one of {', '.join(self.choices)}")
            return self.choices[text.strip().lower()]
        return text

    def described(self) -> str:
        """The help ``pdx backends -v`` shows, with the default as given on a command line."""
        if self.default is None:
            return self.help
        shown = next((text for text, value in self.choices.items() if value == self.default), self.default)
        return f"{self.help} [default: {shown}]"


def option_help(declared: str | Option) -> str:
    return declared.described() if isinstance(declared, Option) else declared


def read_options(declared: Mapping[str, str | Option], given: Mapping[str, str]) -> dict[str, object]:
    """The values of a backend's options: each typed one read from its text (or its default when not
    given), each text one as given; one-line errors name the option. Keys not declared are the
    caller's to refuse (:class:`Backend` does)."""
    values: dict[str, object] = {}
    for key, option in declared.items():
        if isinstance(option, Option):
            text = given.get(key)
            values[key] = option.default if text is None or text == "" else option.read(key, text)
        elif key in given:
            values[key] = given[key]
    return values


def option_pairs(items: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict; ValueError naming the first that is not one."""
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{item!r} is not KEY=VALUE")
        options[key.strip()] = value.strip()
    return options


def int_option(options: Mapping[str, str], key: str, default: int, minimum: int, maximum: int = 2**31 - 1) -> int:
    """An engine option that is a whole number (``-o KEY=N``, ASCII digits, an engine's 32-bit int at
    most unless ``maximum`` says otherwise), or one-line error: an undeclared :class:`Option`'s read."""
    text = options.get(key)
    return default if text is None or text == "" else parse_int(text, f"-o {key}", minimum, maximum)


class Backend(ABC):
    """Base class of every backend; see the module docstring for the contract."""

    #: name used with ``--backend``
    name: ClassVar[str]
    #: the engine measured, e.g. "llama.cpp"
    engine: ClassVar[str]
    #: one line for ``pdx backends``
    summary: ClassVar[str] = ""
    #: model formats accepted: "gguf", "hf"
    model_formats: ClassVar[tuple[str, ...]] = ()
    #: engine options accepted with ``-o KEY=VALUE``: a help text, or an :class:`Option` (typed)
    options: ClassVar[Mapping[str, "str | Option"]] = {}
    #: whether it runs serving scenarios (``pdx serve-bench``) as well as pp/tg tests
    serves: ClassVar[bool] = False
    #: weight type of the synthetic model made when no model is given
    default_dtype: ClassVar[str] = "f16"
    #: whether ``--model owner/name`` may name a Hugging Face Hub repo (see :mod:`pdx.domain.models.hub`)
    hub_models: ClassVar[bool] = False

    def __init__(self, config: BackendConfig) -> None:
        unknown = sorted(set(config.options) - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise PdxError(f"backend {self.name} has no option {unknown[0]!r}; its options: {known}")
        self.config = config
        #: every option's value, typed where the backend declared an :class:`Option` (defaults included)
        self.option_values = read_options(self.options, config.options)

    @classmethod
    @abstractmethod
    def availability(cls, options: Mapping[str, str] | None = None) -> Availability:
        """Say whether the engine can be used here (with these options), importing it lazily."""

    @abstractmethod
    def load(self, model: "ModelInfo") -> EngineInfo:
        """Load the model and return the engine's identity and resolved settings."""

    @abstractmethod
    def run(self, test: "TestSpec", repetitions: int, warmup: int) -> Iterator[Sample]:
        """Run ``warmup`` uncounted and then ``repetitions`` counted repetitions."""

    def test_info(self) -> dict[str, Any]:
        """Engine facts about the test just run (e.g. llama-bench's own record), stored with it."""
        return {}

    def unsupported(self, test: build.Shape) -> str | None:
        """Why this backend cannot run ``test`` (a pp/tg test or a serving scenario), or None if it can."""
        if test.kind == "serve" and not self.serves:
            return f"{self.name} runs no serving scenarios; use a server backend (see `pdx backends`)"
        return None

    @classmethod
    def served_model(cls, config: BackendConfig) -> "ModelInfo | None":
        """The model a backend already has when none is given (e.g. what a running server serves)."""
        return None

    def close(self) -> None:
        """Release the engine (free the model, stop a server)."""

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
