"""The fields of a run record, level by level, as lists: what the row builders
(:mod:`pdx.registry.records`), the bundle schema (``bundle.schema.json``, kept
in step by a test) and content ids read.

The lists of fields are read from the record types of
:mod:`pdx.contract.record`, the one declaration of each field; what is written
here says how a row holds some of them (a test's scalar columns and times, the
columns that are no field) and which fields each content-id version hashes.
The measurement levels' tables are generated from the same types
(:mod:`pdx.registry.schema`). Adding a field to a test, a sample or a request
is one line in its record type and a migration: the row builders and readers
go over these lists, and the bundle schema derives a rule for a field it does
not spell out (see :func:`pdx.registry.bundle_schema.load_schema`; old records
without it stay valid); ``tests/test_validation.py`` adds one and finds it in
the row, the bundle, ``pdx show --json``, the site's JSON and its DATA.md. A
run's and a model's fields are also written in their table with a migration
and in ``bundle.schema.json``. Content ids hash the fields of
:data:`CONTENT_ID_FIELDS` for :data:`CONTENT_ID_VERSION`, every stored
measurement (a test checks none is left out); a new field joins a new version,
never one in use, so an id made before does not change under it.
"""

from __future__ import annotations

from pdx.contract import record
from pdx.registry.schema import RequestRow, SampleRow, TestResult


def fields_of(level: type) -> tuple[str, ...]:
    return tuple(field.name for field in record.fields(level))


def typed_fields(level: type, kind: type, nullable: bool) -> tuple[str, ...]:
    """The fields of ``level`` that hold a ``kind`` (int, or dict: any JSON object), null allowed or not:
    what a reader checks a stored record's fields against."""
    return tuple(f.name for f in record.fields(level) if f.nullable == nullable
                 and (f.is_object if kind is dict else f.kind is kind))


# Columns that are no plain record field: the row's own id, its run or test, a sample's place in the test
# (the list's order), a request's events (a list of pairs, written out in bundle.schema.json).
ROW_ONLY = {"tests": ("id", "run_id"), "samples": ("id", "test_id", "idx"), "requests": ("id", "test_id", "events")}
# The measurement levels, whose tables are generated from their record types.
TABLES = {"test": (TestResult, ROW_ONLY["tests"]), "sample": (SampleRow, ROW_ONLY["samples"]),
          "request": (RequestRow, ROW_ONLY["requests"])}

RUN_FIELDS = fields_of(record.Run)
# Fields of a test that a row carries as they are; the rest are built around them.
TEST_COLUMNS = ("ordinal", "name", "kind", "n_prompt", "n_gen", "depth", "batch", "status", "error", "warmup")
TEST_TIMES = ("started_at", "finished_at")  # ISO 8601 text in a record, datetimes in a row
TEST_LEVELS = tuple(field.name for field in record.fields(record.Test) if field.is_level)  # samples, requests
# Every other field of a test, carried as it is: its objects (engine, ceilings, adaptive, spec, conditions,
# energy) and whatever field comes next.
TEST_OBJECTS = tuple(name for name in fields_of(record.Test) if name not in (*TEST_COLUMNS, *TEST_TIMES, *TEST_LEVELS))
TEST_FIELDS = fields_of(record.Test)
SAMPLE_FIELDS = fields_of(record.Sample)
REQUEST_FIELDS = fields_of(record.Request)
REQUEST_COLUMNS = tuple(name for name in REQUEST_FIELDS if name not in ROW_ONLY["requests"])
MODEL_FIELDS = fields_of(record.Model)

# Labels, not content: the same run keeps its id whatever it is tagged, whichever file or pdx brought it.
NOT_CONTENT = ("id", "tags", "provenance", "pdx_version")
# The content id's version: the fields it hashes (CONTENT_ID_FIELDS[CONTENT_ID_VERSION]) are every stored
# measurement, so an edit of any of them (energy, conditions, a request's schedule or client) changes it.
# There is one content id: every id and file name pdx makes is of this version. An older version is kept
# only to recognise what it made (pdx.registry.bundle.known_ids, the bundle update step to version 2).
CONTENT_ID_VERSION = 2
# Each version's fields are written out, not derived from the lists above: a field added there must not join
# a version already in use; a new stored measurement joins a new version, with its bundle update step.
CONTENT_ID_FIELDS = {
    # Version 1 (bundle schema 1): every field records had when versions began.
    1: {
        "run": ("status", "created_at", "finished_at", "backend", "engine", "threads", "options", "workload",
                "command", "error", "parent_id", "origin", "model", "hardware", "environment", "ceiling_basis",
                "tests"),
        "test": ("ordinal", "name", "kind", "n_prompt", "n_gen", "depth", "batch", "status", "error", "warmup",
                 "started_at", "finished_at", "engine", "ceilings", "adaptive", "spec", "samples", "requests"),
        "sample": ("ns", "n_prompt", "n_gen", "prompt_ns", "gen_ns", "engine"),
        "request": ("sample_idx", "idx", "role", "n_prompt", "max_tokens", "n_gen", "send_ns", "first_ns", "end_ns",
                    "status", "error", "http_status", "finish_reason", "usage", "engine", "events"),
        "model": ("id", "sha256", "name", "path", "format", "architecture", "n_params", "dtype", "n_layers",
                  "n_heads", "n_kv_heads", "head_dim", "n_embd", "n_ff", "n_vocab", "n_ctx_train", "file_bytes",
                  "synthetic", "extra"),
    },
}
# Version 2 (bundle schema 2) adds every measurement a test or request gained since: a test's conditions
# and energy, a request's schedule, client shard and reasoning span. A record holding none of them has the
# same id in both versions (a field a record lacks is not hashed), so only runs holding one are re-identified.
CONTENT_ID_FIELDS[2] = {
    **CONTENT_ID_FIELDS[1],
    "test": CONTENT_ID_FIELDS[1]["test"] + ("conditions", "energy"),
    "request": CONTENT_ID_FIELDS[1]["request"] + ("scheduled_ns", "shard", "reasoning_ns", "answer_ns", "n_reasoning"),
}
