"""The compiled bundle schema (pdx.registry.schema_fast) may say no where jsonschema says yes (the
slow path then decides), never yes where jsonschema says no: checked on real bundles, and on
bundles broken at random places with random JSON (hypothesis)."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runfactory
from pdx.registry import Registry, bundle
from pdx.registry.bundle_schema import load_schema, schema_errors
from pdx.registry.schema_fast import Unsupported, compile_schema


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    registry = Registry(f"sqlite:///{tmp_path_factory.mktemp('fast') / 'r.sqlite'}")
    try:
        records = registry.records(runfactory.fill(registry, 4, n_hardware=2, n_models=2))
    finally:
        registry.close()
    return [bundle.make_bundle(records[:1]), bundle.make_bundle(records[1:], redact=True)]


def _slow_valid(document) -> bool:
    return jsonschema.Draft202012Validator(load_schema()).is_valid(document)


def test_the_bundle_schema_compiles_and_real_bundles_take_the_fast_path(documents):
    fast = compile_schema(load_schema())
    run = compile_schema(load_schema(), "run")
    for document in documents:
        assert fast(document) and _slow_valid(document)
        assert all(run(entry["record"]) for entry in document["runs"])


def test_a_keyword_it_does_not_know_is_refused_not_ignored():
    with pytest.raises(Unsupported, match="oneOf"):
        compile_schema({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}})
    with pytest.raises(Unsupported, match=r"\$ref"):
        compile_schema({"$ref": "other.json#/x"})


def test_a_broken_bundle_still_gets_jsonschemas_message(documents):
    document = copy.deepcopy(documents[0])
    document["runs"][0]["record"]["tests"][0]["n_prompt"] = -3
    assert not compile_schema(load_schema())(document)
    assert schema_errors(document) == "runs[0].record.tests[0].n_prompt: -3 is less than the minimum of 0"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "ok", "tg", "pp", "failed", "0" * 64, "a" * 300, "2026-01-01T00:00:00+00:00"])
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6) | st.sampled_from(
        ["ns", "name", "kind", "id", "status"]), inner, max_size=3),
    max_leaves=6)


def _places(value, path=()):
    """Every (container, key) in a document, for the mutation to pick from."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield value, key
            yield from _places(child)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield value, i
            yield from _places(child)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_fast_yes_is_never_looser_than_jsonschema(documents, data):
    document = copy.deepcopy(data.draw(st.sampled_from(documents)))
    fast = compile_schema(load_schema())
    for _ in range(data.draw(st.integers(1, 3))):
        places = list(_places(document))
        container, key = data.draw(st.sampled_from(places))
        action = data.draw(st.sampled_from(["replace", "negative", "delete", "add"]))
        if action == "negative":  # a number below a minimum, or a value of the wrong type
            container[key] = data.draw(st.sampled_from([-1, -0.5, 2.5, True]))
        elif action == "replace":
            container[key] = data.draw(json_values)
        elif action == "delete":
            del container[key]
        elif isinstance(container, dict):
            container[data.draw(st.text(max_size=6))] = data.draw(json_values)
        else:
            container.append(data.draw(json_values))
    if fast(document):
        assert _slow_valid(document), json.dumps(document)[:2000]
