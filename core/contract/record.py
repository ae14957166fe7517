"""The record pdx keeps of a run, level by level, as typed dicts: what `pdx show --json` prints, what a
bundle carries, what :func:`pdx.registry.records.run_record` reads back and every reader reads.

A record stays a plain dict (JSON in, JSON out, hashed as it is); these types say which keys each
level has and what they hold. A measurement level (:class:`Test`, :class:`Sample`, :class:`Request`)
is declared here once: its table in :mod:`pdx.registry.schema` is generated from it, its field
lists (:mod:`pdx.registry.fields`) are read from it, and the bundle schema derives a rule for a
field it does not spell out. Adding a field to one of them is one line here and its migration;
``NotRequired`` marks a field that records made before it existed lack. A run's fields are
declared here too and checked against its table and the bundle schema by tests (its table is laid
out for storage: its engine is five columns, its model a foreign key); a model's are its dataclass's
(:mod:`pdx.contract.model`), held to its table by a test.

How a field is stored, where its Python type does not say it: :data:`Int64` (nanoseconds, byte
counts), :func:`chars` (text of a bounded length; plain ``str`` is unbounded), :data:`Time` (ISO
8601 text in a record, a timestamp in a row). ``int``, ``float``, ``bool`` and ``str`` are columns of
their kind, ``dict``, ``list`` and an object's record type JSON. ``Annotated[..., Doc("...")]``
describes a field where the bundle schema and DATA.md do not (its column's comment). A field records
made before it lack is ``NotRequired`` and, unless a dict or list, ``Optional``: their rows hold NULL.
"""

# No postponed annotations: TypedDict reads NotRequired from the evaluated ones.
import types
from dataclasses import dataclass
from typing import Annotated, Any, Optional, Union, get_args, get_origin

# typing_extensions' TypedDict and NotRequired: Python 3.10's typing has no NotRequired; readers of these
# types use typing_extensions' get_type_hints and is_typeddict with them.
from typing_extensions import NotRequired, TypedDict, get_type_hints, is_typeddict

# A model's record entry is declared with its dataclass (pdx.contract.model).
from pdx.contract.model import Model as Model


@dataclass(frozen=True)
class Storage:
    """How a field is kept in its table beyond its Python type."""

    kind: str  # "int64", "chars" or "time"
    length: int | None = None


def chars(length: int) -> Storage:
    return Storage("chars", length)


@dataclass(frozen=True)
class Doc:
    """What a field holds, for a reader of a bundle or a site's JSON."""

    text: str


Int64 = Annotated[int, Storage("int64")]
Time = Annotated[str, Storage("time")]

TEST_NAME_MAX = 64  # characters of a test's name (serving scenarios shorten theirs to fit)


class Sample(TypedDict):
    """One counted repetition of a test (:class:`pdx.contract.backend.Sample` as stored)."""

    ns: Int64
    n_prompt: int
    n_gen: int
    prompt_ns: Optional[Int64]
    gen_ns: Optional[Int64]
    engine: dict[str, Any]


class Request(TypedDict):
    """One request a serving test sent (:class:`pdx.contract.request.RequestRecord` as stored): raw
    times in ns and counts, never a summary."""

    sample_idx: Optional[int]  # None: it failed before it made a sample
    idx: int
    role: Annotated[str, chars(32)]
    n_prompt: int
    max_tokens: int
    n_gen: int
    send_ns: Int64  # from the start of its load run
    scheduled_ns: NotRequired[Optional[Int64]]  # when it was due (open loop), from the same start
    shard: NotRequired[Optional[int]]  # the client process that sent it (--clients N); None: one
    # A reasoning model's phases (pdx.domain.serving.reasoning): first thinking and first answer token from send,
    # thinking tokens; None: the stream did not think (its first token is its first answer token)
    reasoning_ns: NotRequired[Optional[Int64]]
    answer_ns: NotRequired[Optional[Int64]]
    n_reasoning: NotRequired[Optional[int]]
    first_ns: Optional[Int64]  # from send
    end_ns: Optional[Int64]  # from send
    status: Annotated[str, chars(16)]
    error: Optional[str]
    http_status: Optional[int]
    finish_reason: Optional[Annotated[str, chars(32)]]
    events: list[Any]  # [arrival ns from send, tokens] per streamed event
    usage: dict[str, Any]
    engine: dict[str, Any]


class Conditions(TypedDict, total=False):
    """What the machine did while a test ran (:mod:`pdx.measure.conditions`); each figure None where the OS did
    not let pdx read it (the CPU figures also where the window was too short to read them)."""

    version: int
    window_s: float
    cpu_count: Optional[int]
    other_cpu_cores: Optional[float]  # cores other processes used: all CPU time less pdx's process tree's
    own_cpu_cores: Optional[float]
    steal_cores: Optional[float]
    load_average: dict[str, Any]  # start, end
    frequency: Optional[dict[str, Any]]
    thermal: Optional[dict[str, Any]]
    power: Optional[dict[str, Any]]
    gpu_memory: Optional[dict[str, Any]]
    # each NVIDIA GPU at the test's start and end (pdx.measure.conditions.gpu.window): {source, devices: [{index,
    # name, start, end}]}, a reading holding pdx.measure.conditions.gpu_figures' figures and reasons; None: no GPU
    gpu: NotRequired[Optional[dict[str, Any]]]
    cooldown_s: float


class EnergyMeter(TypedDict):
    """A meter an energy record read (:meth:`pdx.contract.meter.Meter.describe`)."""

    name: str
    covers: str  # one of pdx.contract.meter.COVERS
    device: NotRequired[str]
    source: NotRequired[str]


class Energy(TypedDict):
    """Joules over a test's timed windows (:mod:`pdx.measure.energy.session`); what they mean per token is
    :mod:`pdx.domain.energy.figures`'."""

    version: int
    meters: list[EnergyMeter]
    joules: dict[str, float]  # each meter's, over the windows read
    timed_s: float  # the windows' total length
    idle_watts: NotRequired[Optional[dict[str, float]]]  # each meter's, model loaded, nothing running
    idle_s: NotRequired[Optional[float]]
    resolution_s: NotRequired[Optional[float]]  # the coarsest meter's step
    lengthened: NotRequired[int]  # repetitions added so the meters could read the test
    samples_read: NotRequired[Optional[list[int]]]  # None: every sample
    coarse: NotRequired[bool]  # shorter than ten steps of the coarsest meter: rough
    dropped: NotRequired[Optional[dict[str, str]]]  # meters that failed mid-run, and why
    price_kwh: NotRequired[float]
    currency: NotRequired[str]
    price_said: NotRequired[str]


class Ceilings(TypedDict):
    """A test against the machine's ceilings (:func:`pdx.domain.ceilings.test_ceilings`): each phase's bounds,
    the test's own ceiling, the one that binds and the fraction of it reached."""

    version: int
    source: str  # whose figures: the vendor's, a probe's, the user's...
    ref: Optional[str]
    bandwidth: Optional[float]  # bytes/s
    flops: Optional[float]  # FLOP/s
    flops_dtype: Optional[str]
    phases: dict[str, dict[str, Any]]  # prefill, decode: pdx.domain.ceilings.roofline.PhaseBound.to_dict()
    ceiling: Optional[float]  # tokens/s
    bound: Optional[str]  # what binds: memory, compute...
    measured: Optional[float]
    fraction: Optional[float]
    above_ceiling: bool
    warning: NotRequired[str]
    missing: NotRequired[Optional[str]]  # why there is no ceiling
    unfit: NotRequired[str]  # why the test cannot have run where it says (its model did not fit): not a result
    routing: NotRequired[str]  # a mixture of experts' routing, as assumed
    speculative: NotRequired[bool]
    sources: NotRequired[dict[str, "Ceilings"]]  # each set of figures' judgement, where there were several


class Test(TypedDict):
    """One test of a run with every sample (and, serving, every request) it kept."""

    ordinal: int
    name: Annotated[str, chars(TEST_NAME_MAX)]
    kind: Annotated[str, chars(8)]
    n_prompt: int
    n_gen: int
    depth: int
    batch: int
    status: Annotated[str, chars(16)]
    error: Optional[str]
    warmup: int
    started_at: Time
    finished_at: Time
    engine: dict[str, Any]
    ceilings: Optional[Ceilings]
    adaptive: Optional[dict[str, Any]]  # an adaptive run's stop record
    spec: NotRequired[dict[str, Any]]  # a serving scenario's parameters
    conditions: NotRequired[Optional[Conditions]]
    energy: NotRequired[Optional[Energy]]
    samples: list[Sample]
    requests: NotRequired[list[Request]]


class Engine(TypedDict):
    name: str
    version: Optional[str]
    commit: Optional[str]
    settings: dict[str, Any]
    details: dict[str, Any]


RUN_STATUSES = ("running", "complete", "partial", "interrupted", "failed")  # a run's status, as stored


class Run(TypedDict):
    id: str  # the content id (pdx.registry.bundle.content_id)
    status: str
    created_at: Time
    finished_at: Optional[Time]
    backend: str
    engine: Engine
    threads: Optional[int]
    options: dict[str, Any]
    workload: dict[str, Any]
    command: str
    error: Optional[str]
    parent_id: Optional[str]  # the run this one repeats (pdx rerun)
    pdx_version: str
    origin: str  # "pdx", or the tool an imported run came from ("llama-bench"...)
    provenance: dict[str, Any]  # where a run came from beyond the manifest: an import's file, a rerun's drift
    tags: list[str]
    model: Model
    hardware: dict[str, Any]  # the machine as detected or imported: id, kind, name and its figures
    environment: dict[str, Any]  # the software manifest (pdx.measure.environment)
    # The hardware figures the run's ceilings use and where they came from (pdx.measure.ceiling_sources.resolve).
    ceiling_basis: Optional[dict[str, Any]]
    tests: list[Test]


LEVELS: dict[str, type] = {"run": Run, "test": Test, "sample": Sample, "request": Request, "model": Model}
# The objects a test carries that the bundle schema writes out under $defs, by its name for them.
OBJECTS: dict[str, type] = {"conditions": Conditions, "energy": Energy}


@dataclass(frozen=True)
class Field:
    """One field of a record type, read: its type without the wrappers, and what they said."""

    name: str
    kind: Any  # int, float, bool, str, dict[...], list[...] or a record type
    nullable: bool  # Optional: the value may be None
    required: bool  # not NotRequired: every record has it
    storage: Storage | None = None
    doc: str | None = None

    @property
    def is_object(self) -> bool:
        """A JSON object: a dict, or a record type of its own."""
        return get_origin(self.kind) is dict or self.kind is dict or is_typeddict(self.kind)

    @property
    def is_level(self) -> bool:
        """A list of the level below (a test's samples): a table of its own, not a field of this one."""
        return get_origin(self.kind) is list and is_typeddict(get_args(self.kind)[0])


def _origin(hint: object) -> object:
    # object: typeshed's get_origin types the origins of special forms (NotRequired, Union, Annotated) as
    # a few classes, so comparing one with them reads as comparing unrelated types
    return get_origin(hint)


def fields(level: type) -> list[Field]:
    """The fields of a record type, in their order."""
    found = []
    # A TypedDict class's (the type system names no type for "any TypedDict class").
    required: frozenset[str] = getattr(level, "__required_keys__")
    for name, hint in get_type_hints(level, include_extras=True).items():
        if _origin(hint) is NotRequired:
            (hint,) = get_args(hint)
        nullable = _origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)
        if nullable:
            (hint,) = [a for a in get_args(hint) if a is not type(None)]
        storage = doc = None
        if _origin(hint) is Annotated:
            hint, *marks = get_args(hint)
            storage = next((m for m in marks if isinstance(m, Storage)), None)
            doc = next((m.text for m in marks if isinstance(m, Doc)), None)
        found.append(Field(name, hint, nullable, name in required, storage, doc))
    return found
