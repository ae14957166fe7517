"""The hub build survives any bundle `pdx hub verify` accepts: bundles generated from the bundle schema
itself (registry/bundle.schema.json as :func:`pdx.registry.bundle_schema.load_schema` completes it,
through hypothesis-jsonschema). Two honest runs a results folder takes (a llama-bench run and an
imported serving run with requests) have fields replaced, at every level the schema describes (run,
model, test, sample, request), by the schema's own values: a field absent (where optional), empty (the
least the schema allows: null, {}, [], "", its minimum), a value drawn from its rule, or a maximal one
(every property of every object present). Each is signed and named by its content as `pdx submit`
would, then verified: what verify refuses it names in one line a problem, and what it accepts must
publish (`pdx publish --bundles`) with no exception, and no text from the file reaches a page
unescaped: free text the schema allows carries a markup probe."""

from __future__ import annotations

import copy
import json
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, note, settings, strategies as st

from pdx.api.contrib.publish import publish_bundles
from pdx.api.contrib.verify import verify_folder
from pdx.registry import Registry, bundle
from pdx.registry.bundle_schema import load_schema
from pdx.registry.hub_folder import file_name
from pdx.registry.importers import read_file
from pdx.registry.redact import redact_record

import runfactory
from test_importers import DATA

hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")

PROBE = "<b title=pdx-probe>"  # markup no redaction touches (no path, host or secret shape)
LEVELS = ("run", "model", "test", "sample", "request")
MODES = ("absent", "empty", "drawn", "maximal")


def _types(rule: dict) -> list[str]:
    kind = rule.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


def _transformed(node, maximal: bool):
    """The schema with every object's properties required (``maximal``), and every free string (no
    pattern, enum, format or short limit) carrying :data:`PROBE`."""
    if isinstance(node, list):
        return [_transformed(item, maximal) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _transformed(value, maximal) for key, value in node.items()}
    if maximal and isinstance(out.get("properties"), dict):
        out["required"] = sorted(out["properties"])
    if "string" in _types(out) and not {"pattern", "enum", "const", "format"} & set(out) \
            and out.get("maxLength", 100) >= 40:
        out["pattern"] = PROBE
    return out


SCHEMA = load_schema()
DEFS = {False: _transformed(SCHEMA["$defs"], False), True: _transformed(SCHEMA["$defs"], True)}


def _rule(level: str, field: str, maximal: bool) -> dict:
    """A field's rule as a schema of its own (its references resolved against the definitions)."""
    return {"$defs": DEFS[maximal], **DEFS[maximal][level]["properties"][field]}


def _emptiest(rule: dict):
    """The least value ``rule`` allows: null, then {}, [], "", a number's minimum (0 else)."""
    if "$ref" in rule:
        rule = SCHEMA["$defs"][rule["$ref"].rsplit("/", 1)[-1]]
    if "const" in rule:
        return rule["const"]
    if "enum" in rule:
        return rule["enum"][0]
    kinds = _types(rule) or ["object"]
    for kind, value in (("null", None), ("object", {}), ("array", []), ("string", "")):
        if kind in kinds:
            return value
    if "boolean" in kinds:
        return False
    return rule.get("minimum", rule.get("exclusiveMinimum", 0))


def _bases() -> list[dict]:
    """Two runs verify accepts, redacted as `pdx submit` writes them."""
    folder = Path(tempfile.mkdtemp())
    registry = Registry(f"sqlite:///{folder / 'contributor.sqlite'}")
    run_id = runfactory.add_run(registry, runfactory.hardware("AMD EPYC 9654", 0),
                                runfactory.model("llama-70b", 0, n_params=70_000_000_000), "llamacpp-bench",
                                runfactory.START, random.Random(0), tests=runfactory.TESTS[:2], repetitions=3)
    (bench,) = registry.records([run_id])
    registry.close()
    shutil.rmtree(folder)
    serving = read_file(DATA / "guidellm_poisson.json")[1][0]
    model = runfactory.model("qwen-7b", 1).to_dict()
    serving["model"] = model | {"id": model["sha256"]}
    return [redact_record(bench), redact_record(serving)]


BASES = _bases()


def _places(record: dict) -> list[tuple[str, dict]]:
    """(schema level, the object at that level) for each level the record holds: the run, its model,
    each test, a test's first sample and first request."""
    places = [("run", record), ("model", record["model"])]
    for test in record["tests"]:
        places.append(("test", test))
        places += [(level, test[key][0]) for level, key in (("sample", "samples"), ("request", "requests"))
                   if test.get(key)]
    return places


def _holds_level(rule: dict) -> bool:
    refs = [rule.get("$ref"), (rule.get("items") or {}).get("$ref")]
    return any(ref and ref.rsplit("/", 1)[-1] in LEVELS for ref in refs)


@st.composite
def schema_bundles(draw) -> dict:
    record = copy.deepcopy(draw(st.sampled_from(BASES)))
    places = _places(record)
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        level, target = draw(st.sampled_from(places))
        properties = SCHEMA["$defs"][level]["properties"]
        field = draw(st.sampled_from(sorted(properties)))
        # A field that holds a level (a run's tests, a test's samples) is varied where that level is: here
        # it is only taken away or emptied.
        mode = draw(st.sampled_from(MODES[:2] if _holds_level(properties[field]) else MODES))
        if mode == "absent":
            if field not in SCHEMA["$defs"][level].get("required", ()):
                target.pop(field, None)
        elif mode == "empty":
            target[field] = _emptiest(properties[field])
        else:
            target[field] = draw(hypothesis_jsonschema.from_schema(_rule(level, field, mode == "maximal")))
        edits.append(f"{level}.{field} {mode}: {str(target.get(field, '(absent)'))[:300]}")
    return record, edits


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)


def _markup(record: dict) -> set[str]:
    """Text of the record that would be markup on a page: the probe, and any long string holding a tag."""
    return {PROBE} | {s for s in _strings(record) if len(s) >= 12 and "<" in s and not s.startswith("<redacted")}


@settings(max_examples=40, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                 HealthCheck.large_base_example])
@given(schema_bundles())
def test_every_bundle_verify_accepts_publishes_escaped(varied):
    record, edits = varied
    note("\n".join(edits))
    root = Path(tempfile.mkdtemp())
    try:
        folder = root / "results"
        folder.mkdir()
        (folder / file_name(record)).write_text(json.dumps(bundle.make_bundle([record]), ensure_ascii=False))
        problems = verify_folder(folder, workers=1).problems
        for problem in problems:  # refused: in one line, naming the file
            assert "\n" not in str(problem) and str(problem).startswith(file_name(record))
        event("refused by verify" if problems else "published")
        if problems:
            return
        result = publish_bundles(folder, root / "site", cache=False, workers=1)
        assert not result.rejected
        markup = _markup(record)
        for page in (root / "site").rglob("*"):
            if page.suffix in (".html", ".svg"):
                text = page.read_text()
                assert not [m for m in markup if m in text], f"{page.name} holds unescaped text of the bundle"
    finally:
        shutil.rmtree(root)


def test_both_bases_verify_and_publish(tmp_path):
    """The runs the suite varies are ones a results folder takes, so what it finds is the varied field's."""
    folder = tmp_path / "results"
    folder.mkdir()
    for record in BASES:
        (folder / file_name(record)).write_text(json.dumps(bundle.make_bundle([record])))
    assert verify_folder(folder, workers=1).problems == []
    assert publish_bundles(folder, tmp_path / "site", cache=False, workers=1).rejected == []
    assert any(test.get("requests") for record in BASES for test in record["tests"])


def test_the_probe_reaches_pages_escaped(tmp_path):
    """The escape check is not vacuous: the probe in a field pages show (the model's name) is on the run's
    page, escaped."""
    record = copy.deepcopy(BASES[0])
    record["model"]["name"] = f"llama {PROBE}"
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / file_name(record)).write_text(json.dumps(bundle.make_bundle([record])))
    assert verify_folder(folder, workers=1).problems == []
    publish_bundles(folder, tmp_path / "site", cache=False, workers=1)
    page = (tmp_path / "site" / "runs" / f"{record['id']}.html").read_text()
    assert "&lt;b title=pdx-probe&gt;" in page and PROBE not in page


def _verified(tmp_path: Path, record: dict) -> list[str]:
    folder = tmp_path / "results"
    folder.mkdir(parents=True)
    (folder / file_name(record)).write_text(json.dumps(bundle.make_bundle([record])))
    return [str(p) for p in verify_folder(folder, workers=1).problems]


def test_what_the_suite_found(tmp_path):
    """Found by the suite: an adaptive record without its repetitions (which a page reads) passed verify,
    then stopped the build; a serving test that made no tokens (n_gen 0, every rate 0) stopped its run
    page's chart. The first is refused, naming the field; the second publishes."""
    stopped = copy.deepcopy(BASES[0])
    stopped["tests"][0]["adaptive"] = {}
    (problem,) = _verified(tmp_path / "a", stopped)
    assert "tests[0].adaptive" in problem and "repetitions" in problem
    idle = copy.deepcopy(BASES[1])
    idle["tests"][0]["n_gen"] = 0
    assert _verified(tmp_path / "b", idle) == []
    assert publish_bundles(tmp_path / "b" / "results", tmp_path / "site", cache=False, workers=1).rejected == []
