"""The fields of a run record, level by level: the one list the row builders
(:mod:`pdx.registry.records`), the bundle schema (``bundle.schema.json``, kept
in step by a test) and content ids read.

Adding a field to a test, a sample or a request: a column of its table in
:mod:`pdx.registry.schema` and its migration, nothing more. Those levels' fields
are their tables' columns (a test's: its scalar columns, its two times, and
every other column as an object it carries as it is), the row builders and
readers (:mod:`pdx.registry.records`) go over them, and the bundle schema
derives a rule for a column it does not spell out (see
:func:`pdx.registry.bundle_schema.load_schema`; old records without it stay
valid); ``tests/test_validation.py`` adds one and finds it in the row, the
bundle, ``pdx show --json`` and the site's JSON. A run's and a model's fields
are listed here, and in their table with a migration and in ``bundle.schema.json``. Content ids do not change: they hash the fields of
:data:`CONTENT_ID_FIELDS` for the record's content-id version, and a new field
joins only a new version.
"""

from __future__ import annotations

from pdx.registry.schema import RequestRow, SampleRow, TestResult

# Columns that are no plain record field: the row's own id, its run or test, a sample's place in the test
# (the list's order), a request's events (a list of pairs, written out in bundle.schema.json).
ROW_ONLY = {"tests": ("id", "run_id"), "samples": ("id", "test_id", "idx"), "requests": ("id", "test_id", "events")}
# The measurement levels, whose fields are their table's columns.
TABLES = {"test": (TestResult, ROW_ONLY["tests"]), "sample": (SampleRow, ROW_ONLY["samples"]),
          "request": (RequestRow, ROW_ONLY["requests"])}

RUN_FIELDS = ("id", "status", "created_at", "finished_at", "backend", "engine", "threads", "options", "workload",
              "command", "error", "parent_id", "pdx_version", "origin", "provenance", "tags", "model", "hardware",
              "environment", "ceiling_basis", "tests")
# Columns of the tests table that a record's test carries as they are; the rest are built around them.
TEST_COLUMNS = ("ordinal", "name", "kind", "n_prompt", "n_gen", "depth", "batch", "status", "error", "warmup")
TEST_TIMES = ("started_at", "finished_at")  # ISO 8601 text in a record, datetimes in a row
# Every other column of the tests table: an object the test carries as it is (engine, ceilings, adaptive,
# spec, conditions, energy, and whatever column comes next); a nullable one may be null.
TEST_OBJECTS = tuple(c.name for c in TestResult.__table__.columns
                     if c.name not in (*ROW_ONLY["tests"], *TEST_COLUMNS, *TEST_TIMES))
TEST_OPTIONAL_OBJECTS = tuple(name for name in TEST_OBJECTS if TestResult.__table__.columns[name].nullable)
TEST_FIELDS = (*TEST_COLUMNS, *TEST_TIMES, *TEST_OBJECTS, "samples", "requests")
SAMPLE_FIELDS = tuple(c.name for c in SampleRow.__table__.columns if c.name not in ROW_ONLY["samples"])
REQUEST_COLUMNS = tuple(c.name for c in RequestRow.__table__.columns if c.name not in ROW_ONLY["requests"])
REQUEST_FIELDS = (*REQUEST_COLUMNS, "events")
MODEL_FIELDS = ("id", "sha256", "name", "path", "format", "architecture", "n_params", "dtype", "n_layers", "n_heads",
                "n_kv_heads", "head_dim", "n_embd", "n_ff", "n_vocab", "n_ctx_train", "file_bytes", "synthetic",
                "extra")

# Labels, not content: the same run keeps its id whatever it is tagged, whichever file or pdx brought it.
NOT_CONTENT = ("id", "tags", "provenance", "pdx_version")
CONTENT_ID_VERSION = 1
# Version 1 is every field records had when versions began, so ids made before then stay what they were.
# Written out, not derived from the lists above: a field added there must not join a version already in use.
CONTENT_ID_FIELDS = {
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
