"""Bundles (export/import) and push/pull between registries: every field
survives, twice adds nothing, a bad file stores nothing."""

import json
import re

from pdx.domain.models import identify
from pdx.registry import Registry
from pdx.domain.workload import TestSpec

from conftest import assert_one_line_error, pdx_here, run_pdx_here
from test_registry import make_start, outcome
from test_importers import DATA


def fill(url, model_path) -> list[str]:
    """Runs that use every field: tags, a parent, provenance, adaptive records, an import."""
    registry = Registry(url)
    model = identify(model_path)
    first = registry.start_run(make_start(model, tags=("base", "ci")))
    registry.save_test(first, outcome(0, TestSpec(64, 0)).to_record())
    registry.finish_run(first, "complete")
    start = make_start(model, tags=())
    start.parent_id, start.provenance = first, {"rerun_of": first, "drift": {"engine.commit": {"was": "a", "now": "b"}}}
    second = registry.start_run(start)
    adaptive = outcome(0, TestSpec(0, 16, depth=32), n=4)
    adaptive.adaptive = {"target_ci": 0.02, "max_repetitions": 30, "repetitions": 4, "achieved_ci": 0.011,
                         "stopped_by": "target", "calls": 2}
    registry.save_test(second, adaptive.to_record())
    failed = outcome(1, TestSpec(128, 0), n=0)
    failed.status, failed.error = "failed", "engine said no"
    registry.save_test(second, failed.to_record())
    registry.finish_run(second, "partial", "pp128: engine said no")
    registry.close()
    imported = pdx_here("import", str(DATA / "vllm_bench_serve_detailed.json"), "--registry", url, "--json")
    return [first, second, json.loads(imported)["added"][0]]


def shown(url, run_id) -> str:
    return pdx_here("show", run_id, "--registry", url, "--json")


def test_export_then_import_reproduces_every_run_byte_for_byte(registry_url, tmp_path, tiny_gguf):
    ids = fill(registry_url, tiny_gguf)
    bundle = tmp_path / "runs.pdx.json"
    pdx_here("export", "-o", str(bundle), "--registry", registry_url)
    empty = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    done = json.loads(pdx_here("import", str(bundle), "--registry", empty, "--json"))
    assert sorted(done["added"]) == sorted(ids) and done["format"] == "bundle"
    for run_id in ids:
        assert shown(empty, run_id) == shown(registry_url, run_id)
    again = json.loads(pdx_here("import", str(bundle), "--registry", empty, "--json"))
    assert again["added"] == [] and sorted(again["skipped"]) == sorted(ids)


def test_the_bundle_follows_its_json_schema(registry_url, tmp_path, tiny_gguf):
    import jsonschema

    from pdx.registry.bundle_schema import load_schema

    fill(registry_url, tiny_gguf)
    bundle = tmp_path / "b.json"
    pdx_here("export", "-o", str(bundle), "--registry", registry_url, "--where", "tag=ci")
    document = json.loads(bundle.read_text())
    schema = load_schema()  # bundle.schema.json and the columns it leaves to the tables
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(document, schema)
    assert document["schema_version"] == 1 and len(document["runs"]) == 1  # --where tag=ci


def _mask(text: str, original_host: str) -> str:
    """Host names and absolute paths, replaced by the same marks on both sides."""
    text = text.replace(f'"hostname": "{original_host}"', '"hostname": "<redacted-host>"')
    return re.sub(r'(?:<redacted>|/[^\s"\',]*)/([^/\s"\',]+)', r"<P>/\1", text)


def test_redacted_export_hides_hosts_and_paths(registry_url, tmp_path, tiny_gguf):
    ids = fill(registry_url, tiny_gguf)
    bundle = tmp_path / "public.pdx.json"
    pdx_here("export", "-o", str(bundle), "--redact", "--registry", registry_url)
    text = bundle.read_text()
    host = json.loads(shown(registry_url, ids[0]))["environment"]["hostname"]
    records = [entry["record"] for entry in json.loads(text)["runs"]]
    assert {r["environment"]["hostname"] for r in records if r["origin"] == "pdx"} == {"<redacted-host>"}
    assert str(tiny_gguf) not in text and str(tmp_path) not in text and (len(host) < 3 or host not in text)
    assert "<redacted>/" + tiny_gguf.name in text and json.loads(text)["redacted"] is True
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    pdx_here("import", str(bundle), "--registry", other)
    for run_id in ids:  # identical but for the redacted fields
        assert _mask(shown(other, run_id), host) == _mask(shown(registry_url, run_id), host)


def test_bad_bundles_store_nothing(registry_url, tmp_path, tiny_gguf):
    source = f"sqlite:///{tmp_path / 'source.sqlite'}"
    fill(source, tiny_gguf)
    bundle = tmp_path / "b.json"
    pdx_here("export", "-o", str(bundle), "--registry", source)
    document = json.loads(bundle.read_text())
    tampered = json.loads(json.dumps(document))
    tampered["runs"][1]["record"]["tests"][0]["samples"][0]["ns"] += 1
    newer = document | {"schema_version": 2}
    broken = json.loads(json.dumps(document))
    del broken["runs"][2]["record"]["model"]
    text = bundle.read_text()
    cases = {
        "tampered.json": (json.dumps(tampered), "does not match its sha256"),
        "newer.json": (json.dumps(newer), "newer than this pdx reads"),
        "broken.json": (json.dumps(broken), "not a valid pdx bundle"),
        "truncated.json": (text[: len(text) // 2], "truncated"),
    }
    for name, (content, needle) in cases.items():
        (tmp_path / name).write_text(content)
        assert_one_line_error(run_pdx_here("import", str(tmp_path / name), "--registry", registry_url), needle)
    assert json.loads(pdx_here("runs", "--registry", registry_url, "--json")) == []


def test_push_then_pull_round_trips_every_field(registry_url, tmp_path, tiny_gguf):
    local = f"sqlite:///{tmp_path / 'local.sqlite'}"
    ids = fill(local, tiny_gguf)
    pushed = json.loads(pdx_here("registry", "push", registry_url, "--registry", local, "--json"))
    assert sorted(pushed["added"]) == sorted(ids)
    assert json.loads(pdx_here("registry", "push", registry_url, "--registry", local, "--json"))["added"] == []
    fresh = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    pulled = json.loads(pdx_here("registry", "pull", registry_url, ids[1][:8], "--registry", fresh, "--json"))
    assert pulled["added"] == [ids[1]]
    pulled = json.loads(pdx_here("registry", "pull", registry_url, "--registry", fresh, "--json"))
    assert sorted(pulled["added"]) == sorted(set(ids) - {ids[1]}) and pulled["skipped"] == [ids[1]]
    for run_id in ids:
        assert shown(fresh, run_id) == shown(registry_url, run_id) == shown(local, run_id)


def test_where_filters_are_checked(registry_url, tmp_path):
    assert_one_line_error(run_pdx_here("export", "-o", str(tmp_path / "x.json"), "--where", "colour=red",
                                  "--registry", registry_url), "--where 'colour=red'")
    assert_one_line_error(run_pdx_here("export", "-o", str(tmp_path / "x.json"), "--registry", registry_url),
                          "no runs to export")
