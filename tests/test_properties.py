"""Properties of every parser of user input and every reader of records: valid input round-trips;
any other input is a one-line PdxError (or, for KEY=VALUE, the ValueError its callers turn into
one), never another exception. Hypothesis generates the input."""

import copy
import json
import math
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdx.contract.backend import Option, int_option, option_pairs, read_options
from pdx.contract.errors import PdxError
from pdx.contract.numbers import MAX_TOKENS, parse_float, parse_int
from pdx.registry.bundle import digest, make_bundle, read_bundle
from pdx.registry.validate import RecordError, check_records
from pdx.registry.where import WHERE_KEYS, describe, parse_where
from pdx.base.units import parse_bandwidth, parse_bytes, parse_count, parse_flops
from pdx.domain.workload import MAX_VALUES, TestSpec, parse_int_list

TEXT = st.text(max_size=40)
ANY_TEXT = st.one_of(TEXT, st.text(alphabet="0123456789-+*,.eE ²٣４naif%_=", max_size=30))


def one_line(exc: PdxError) -> None:
    assert "\n" not in str(exc) and str(exc).strip()


# -- numbers ------------------------------------------------------------------------------------------------

@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_whole_numbers_round_trip(value):
    assert parse_int(str(value), "--n", minimum=None) == value


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e30, max_value=1e30))
def test_decimal_numbers_round_trip(value):
    assert parse_float(repr(value), "--x") == value


@given(ANY_TEXT)
def test_any_text_is_a_number_or_one_line(text):
    for parse in (lambda t: parse_int(t, "--n"), lambda t: parse_float(t, "--x")):
        try:
            value = parse(text)
        except PdxError as exc:
            one_line(exc)
            assert "--" in str(exc)
        else:
            assert math.isfinite(value) and text.strip().isascii()


# -- workload lists and test names --------------------------------------------------------------------------

@given(st.lists(st.integers(min_value=0, max_value=MAX_TOKENS), min_size=1, max_size=20))
def test_workload_lists_round_trip(values):
    assert parse_int_list(",".join(map(str, values)), "-p") == values


@given(st.integers(0, 5000), st.integers(0, 5000), st.integers(1, 64))
def test_ranges_expand_like_llama_bench(first, span, step):
    values = parse_int_list(f"{first}-{first + span}+{step}", "-p") if span // step < MAX_VALUES else None
    if values is not None:
        assert values == list(range(first, first + span + 1, step))


@given(ANY_TEXT)
def test_any_list_text_is_a_list_or_one_line(text):
    try:
        values = parse_int_list(text, "-p")
    except PdxError as exc:
        one_line(exc)
        assert str(exc).startswith("-p")
    else:
        assert values and all(isinstance(v, int) and 0 <= v <= MAX_TOKENS for v in values)


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 512))
def test_test_names_round_trip(n_prompt, n_gen, depth, batch):
    if n_prompt or n_gen:
        spec = TestSpec(n_prompt, n_gen, depth, batch)
        assert TestSpec.parse(spec.name) == spec


@given(ANY_TEXT)
def test_any_test_name_is_a_test_or_one_line(text):
    try:
        TestSpec.parse(text)
    except PdxError as exc:
        one_line(exc)


# -- units --------------------------------------------------------------------------------------------------

@given(st.floats(min_value=1e-3, max_value=1e6), st.sampled_from([("", 1), ("k", 1e3), ("G", 1e9), ("Gi", 2**30)]))
def test_units_round_trip(value, prefix):
    text, scale = f"{value!r}".replace("e+", "e"), prefix[1]
    assert parse_bytes(f"{text}{prefix[0]}B") == pytest.approx(value * scale)
    if prefix[0]:
        assert parse_bandwidth(f"{text}{prefix[0]}B/s") == pytest.approx(value * scale)
        assert parse_flops(f"{text}{prefix[0]}FLOPS") == pytest.approx(value * scale)
    assert parse_count(f"{text}B") == pytest.approx(value * 1e9)


@given(ANY_TEXT | st.text(alphabet="0123456789.eEkKMGTPib/sFLOPS -", max_size=20))
def test_any_quantity_is_a_finite_figure_or_one_line(text):
    for parse in (parse_bytes, parse_bandwidth, parse_flops, parse_count):
        try:
            value = parse(text)
        except PdxError as exc:
            one_line(exc)
        else:
            assert math.isfinite(value) and value > 0


# -- --where and KEY=VALUE ----------------------------------------------------------------------------------

VALUE = st.text(alphabet=st.characters(blacklist_characters=",=", blacklist_categories=("Cs",)), min_size=1,
                max_size=12).map(str.strip).filter(bool)


@given(st.dictionaries(st.sampled_from(WHERE_KEYS), VALUE, max_size=len(WHERE_KEYS)))
def test_where_round_trips(where):
    assert parse_where([describe(where)]) == where
    assert parse_where([f"{k}={v}" for k, v in where.items()]) == where


@given(st.lists(ANY_TEXT, max_size=4))
def test_any_where_is_filters_or_one_line(items):
    try:
        where = parse_where(items)
    except PdxError as exc:
        one_line(exc)
    else:
        assert set(where) <= set(WHERE_KEYS) and all(where.values())


KEY = st.text(alphabet=st.characters(blacklist_characters="=", blacklist_categories=("Cs", "Zs", "Cc")),
              min_size=1, max_size=12)


@given(st.dictionaries(KEY, VALUE, max_size=5))
def test_key_value_options_round_trip(options):
    assert option_pairs([f"{k}={v}" for k, v in options.items()]) == options


@given(st.lists(ANY_TEXT, max_size=4))
def test_any_key_value_is_options_or_one_line(items):
    try:
        options = option_pairs(items)
    except ValueError as exc:  # the CLI turns it into a one-line usage error naming -o
        assert "\n" not in str(exc) and "KEY=VALUE" in str(exc)
    else:
        for key, value in options.items():
            try:
                int_option(options, key, 1, 1)
            except PdxError as exc:
                one_line(exc)
                assert f"-o {key}" in str(exc)


_DECLARED = {
    "size": Option(help="a size", default=8, kind="int", minimum=1, maximum=4096),
    "mode": Option(help="a mode", default="auto", kind="choice", choices={"on": "on", "1": "on", "auto": "auto"}),
    "path": "a path, as text",
}


@given(st.dictionaries(st.sampled_from(sorted(_DECLARED)), ANY_TEXT, max_size=3))
def test_a_declared_option_reads_typed_or_fails_in_one_line_naming_it(given_options):
    """Every typed option given is read to its type and range, or refused in one line naming it; one not
    given takes its default; a text option is kept as given."""
    try:
        values = read_options(_DECLARED, given_options)
    except PdxError as exc:
        one_line(exc)
        assert any(f"-o {key}" in str(exc) for key in given_options)
    else:
        assert 1 <= values["size"] <= 4096 and isinstance(values["size"], int)
        assert values["mode"] in ("on", "auto")
        assert values.get("path") == given_options.get("path")
        if not given_options.get("size"):
            assert values["size"] == 8


def test_an_option_shows_its_default_as_written_on_a_command_line():
    assert _DECLARED["size"].described() == "a size [default: 8]"
    assert Option(help="repack", default=True, kind="choice", choices={"1": True, "0": False}).described() == \
        "repack [default: 1]"
    with pytest.raises(PdxError):
        Option(help="x", kind="choice")  # a choice of nothing


# -- the bundle reader and the record check ------------------------------------------------------------------

@pytest.fixture(scope="module")
def record(tmp_path_factory, tiny_gguf) -> dict:
    from pdx.domain.models import identify
    from pdx.registry import Registry
    from pdx.domain.workload import TestSpec as Spec

    from test_registry import make_start, outcome

    registry = Registry(f"sqlite:///{tmp_path_factory.mktemp('props') / 'r.sqlite'}")
    run_id = registry.start_run(make_start(identify(tiny_gguf)))
    registry.save_test(run_id, outcome(0, Spec(16, 0)).to_record())
    registry.finish_run(run_id, "complete")
    (found,) = registry.records([run_id])
    registry.close()
    return found


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=8)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, (*path, i))


def _replace(value, path, new):
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copy


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.data())
def test_a_changed_record_is_accepted_whole_or_refused_in_one_line(record, data):
    """Any value anywhere in a real record: the check accepts it or names it in one line; what it
    accepts, the bundle reader reads back unchanged."""
    path = data.draw(st.sampled_from(list(_paths(record))))
    changed = _replace(record, path, data.draw(JSON))
    try:
        (kept,) = check_records([changed], "bundle.json")
    except RecordError as exc:
        one_line(exc)
        assert str(exc).startswith("bundle.json")
        return
    document = json.loads(json.dumps(make_bundle([kept])))
    assert read_bundle(document, "bundle.json") == [kept]


@SETTINGS
@given(JSON)
def test_any_json_document_is_a_bundle_or_one_line(document):
    try:
        read_bundle(document, "x.json")
    except PdxError as exc:
        one_line(exc)
        assert "x.json" in str(exc)


@pytest.fixture
def registry(tmp_path):
    from pdx.registry import Registry

    store = Registry(f"sqlite:///{tmp_path / 'r.sqlite'}")
    yield store
    store.close()


def test_a_whole_float_for_an_integer_field_is_refused(record):
    # Hypothesis found it: a test's warmup as 0.0 passed the schema and read back from the registry as 0.
    changed = copy.deepcopy(record)
    changed["tests"][0]["warmup"] = 0.0
    with pytest.raises(RecordError, match="warmup"):
        check_records([changed], "x")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_what_the_check_accepts_the_registry_stores_and_returns(record, registry, data):
    """The check and the database agree: a record it accepts is stored and read back as it was."""
    path = data.draw(st.sampled_from([p for p in _paths(record) if p and p[0] in
                                      ("options", "engine", "provenance", "tests", "tags", "threads")]))
    changed = _replace(record, path, data.draw(JSON)) | {"id": uuid.uuid4().hex}
    try:
        check_records([changed], "x")
    except RecordError:
        return
    registry.add_records([changed])
    (back,) = registry.records([changed["id"]])
    expected = json.loads(json.dumps(changed))
    expected["tags"] = sorted(set(expected["tags"]))  # a run's tags are a set: each once, read back sorted
    assert digest(back) == digest(expected)
