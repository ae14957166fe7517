"""One builder per record level (pdx.contract.build): what a caller does not say gets its default there,
a field older records lack stays absent (so content ids stay what they were), a name the record does
not declare is refused, and a backend's sample figure must be one its record declares."""

from __future__ import annotations

import pytest

from pdx.contract import build, record
from pdx.contract.backend import FIGURES, Sample
from pdx.contract.errors import PdxError
from pdx.contract.model import ModelInfo
from pdx.contract.test_spec import TestSpec
from pdx.measure.runner import check_sample
from pdx.registry import fields


def test_a_sample_has_every_field_its_record_declares():
    built = build.sample(1_000, 8, 0)
    assert tuple(built) == fields.SAMPLE_FIELDS
    assert built == {"ns": 1_000, "n_prompt": 8, "n_gen": 0, "prompt_ns": None, "gen_ns": None, "engine": {}}
    with pytest.raises(TypeError, match="'queue_ns'"):
        build.sample(1_000, queue_ns=3)


def test_a_test_says_what_it_was_told_and_defaults_the_rest():
    """An importer's test has no spec, conditions, energy or requests unless it gives them: the fields
    records made before them lack stay absent, as content ids of version 1 hashed them."""
    made = build.test(TestSpec(8, 0), [build.sample(1_000, 8, 0)], ordinal=0, started_at="2025-01-01T00:00:00+00:00")
    required = {f.name for f in record.fields(record.Test) if f.required}
    assert set(made) == required
    assert made["finished_at"] == made["started_at"] and made["ceilings"] is None and made["engine"] == {}
    served = build.test(TestSpec(8, 0), [], ordinal=1, started_at=None, spec={"scenario": "load"}, requests=[])
    assert served["spec"] == {"scenario": "load"} and served["requests"] == []
    with pytest.raises(TypeError, match="'probe_note'"):
        build.test(TestSpec(8, 0), [], ordinal=0, started_at=None, probe_note={})


def test_a_run_s_keys_are_its_record_s():
    model = ModelInfo(path="/m.gguf", name="m", format="gguf", architecture="llama", n_params=1, dtype="f16",
                      n_layers=1, n_heads=1, n_kv_heads=1, head_dim=1, n_embd=1, n_ff=1, n_vocab=1, n_ctx_train=1,
                      file_bytes=1, sha256="a" * 64)
    run = build.run(backend="sleep", engine=build.engine("time.sleep"), model=model.to_record(), hardware={},
                    environment={}, pdx_version="0", created_at=None, tags=["b", "a", "b"])
    assert tuple(run) == fields.RUN_FIELDS and run["tags"] == ["b", "a"] and run["status"] == "running"
    assert tuple(run["model"]) == fields.MODEL_FIELDS and run["model"]["id"] == "a" * 64


def test_a_backend_s_figure_must_be_one_its_record_declares():
    """Sample.figures carries what a sample's record declares beyond Sample's own fields (none today), by
    name; a backend that gives another is a one-line error naming it."""
    assert [f.name for f in FIGURES] == []
    sample = Sample(ns=1_000, n_prompt=8, figures={"queue_ns": 3})
    with pytest.raises(PdxError, match="'queue_ns'.*pdx.contract.record.Sample"):
        check_sample(TestSpec(8, 0), sample)
