"""The record pdx keeps of a run, level by level, as typed dicts: what `pdx show --json` prints, what a
bundle carries, what :func:`pdx.registry.records.run_record` reads back and every reader reads.

A record stays a plain dict (JSON in, JSON out, hashed as it is); these types say which keys each
level has and what they hold. A measurement level (:class:`Test`, :class:`Sample`, :class:`Request`)
is declared here once: its table in :mod:`pdx.registry.schema` is generated from it, its field
lists (:mod:`pdx.registry.fields`) are read from it, and the bundle schema derives a rule for a
field it does not spell out. Adding a field to one of them is one line here and its migration;
``NotRequired`` marks a field that records made before it existed lack. A run's and a model's
fields are declared here too and checked against their tables and the bundle schema by tests
(their tables are laid out for storage: a run's engine is five columns, its model a foreign key).

How a field is stored, where its Python type does not say it: :data:`Int64` (nanoseconds, byte
counts), :func:`chars` (text of a bounded length; plain ``str`` is unbounded), :data:`Time` (ISO
8601 text in a record, a timestamp in a row). ``dict`` and ``list`` fields are JSON.
"""

# No postponed annotations: TypedDict reads NotRequired from the evaluated ones.
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, Optional, TypedDict


@dataclass(frozen=True)
class Storage:
    """How a field is kept in its table beyond its Python type."""

    kind: str  # "int64", "chars" or "time"
    length: int | None = None


def chars(length: int) -> Storage:
    return Storage("chars", length)


Int64 = Annotated[int, Storage("int64")]
Time = Annotated[str, Storage("time")]

TEST_NAME_MAX = 64  # characters of a test's name (serving scenarios shorten theirs to fit)


class Sample(TypedDict):
    """One counted repetition of a test (:class:`pdx.backend.Sample` as stored)."""

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
    first_ns: Optional[Int64]  # from send
    end_ns: Optional[Int64]  # from send
    status: Annotated[str, chars(16)]
    error: Optional[str]
    http_status: Optional[int]
    finish_reason: Optional[Annotated[str, chars(32)]]
    events: list[Any]  # [arrival ns from send, tokens] per streamed event
    usage: dict[str, Any]
    engine: dict[str, Any]


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
    # Each phase's bounds, the binding ceiling and the fraction reached (pdx.ceilings.test_ceilings).
    ceilings: Optional[dict[str, Any]]
    adaptive: Optional[dict[str, Any]]  # an adaptive run's stop record
    spec: NotRequired[dict[str, Any]]  # a serving scenario's parameters
    conditions: NotRequired[Optional[dict[str, Any]]]  # what the machine did meanwhile (pdx.conditions)
    energy: NotRequired[Optional[dict[str, Any]]]  # joules over the timed windows (pdx.energy)
    samples: list[Sample]
    requests: NotRequired[list[Request]]


class Engine(TypedDict):
    name: str
    version: Optional[str]
    commit: Optional[str]
    settings: dict[str, Any]
    details: dict[str, Any]


class Model(TypedDict):
    id: str
    sha256: str  # of the file's content: the model's identity
    name: str
    path: str  # where it was last seen
    format: str
    architecture: str
    n_params: int
    dtype: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    n_embd: int
    n_ff: int
    n_vocab: int
    n_ctx_train: int
    file_bytes: int
    synthetic: Optional[str]
    extra: dict[str, Any]


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
    environment: dict[str, Any]  # the software manifest (pdx.environment)
    # The hardware figures the run's ceilings use and where they came from (pdx.ceilings.sources.resolve).
    ceiling_basis: Optional[dict[str, Any]]
    tests: list[Test]


LEVELS: dict[str, type] = {"run": Run, "test": Test, "sample": Sample, "request": Request, "model": Model}
