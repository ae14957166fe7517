"""One record check before every write (pdx.registry.validate): a bad record from a bundle, an
importer, another registry or a running benchmark is a one-line error, and nothing is stored."""

import json
import math
import sqlite3

import pytest

from pdx.contract.backend import Sample
from pdx.contract.errors import PdxError
from pdx.domain.models import identify
from pdx.registry import Registry
from pdx.registry.bundle import digest
from pdx.registry.importers import read_file
from pdx.registry.validate import RecordError, check_records, count, finite_number, timestamp
from pdx.measure.runner import TestOutcome
from pdx.domain.workload import TestSpec

from conftest import assert_one_line_error, pdx_here, pdx_import, run_pdx_here
from test_registry import make_start, outcome
from test_transfer import fill
from pdx.reports.results import read_run


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, tiny_gguf) -> dict:
    """A real bundle of real runs: a measured one with samples, an adaptive one, a vLLM import with requests."""
    folder = tmp_path_factory.mktemp("source")
    url = f"sqlite:///{folder / 'source.sqlite'}"
    fill(url, tiny_gguf)
    pdx_here("export", "-o", str(folder / "b.json"), "--registry", url)
    return json.loads((folder / "b.json").read_text())


def reseal(document: dict) -> dict:
    """The document with every digest right again: the damage is in the content, not the seal."""
    for entry in document["runs"]:
        entry["sha256"] = digest(entry["record"])
    return document


def refused(tmp_path, registry_url, document_or_text, *needles) -> str:
    path = tmp_path / "bad.pdx.json"
    text = document_or_text if isinstance(document_or_text, str) else json.dumps(document_or_text)
    path.write_text(text)
    line = assert_one_line_error(run_pdx_here("import", str(path), "--registry", registry_url), *needles)
    assert json.loads(pdx_here("runs", "--registry", registry_url, "--json")) == []  # all or nothing
    return line


def copy(document: dict) -> dict:
    return json.loads(json.dumps(document))


BAD_VALUES = {
    "bad date": (lambda r: r.update(created_at="yesterday-ish"), "created_at", "ISO 8601"),
    "2**63": (lambda r: r["tests"][0]["samples"][0].update(ns=2**63), "samples[0].ns", "64 bits"),
    "int column": (lambda r: r["tests"][0].update(n_prompt=2**40), "n_prompt", "does not fit"),
    "fast": (lambda r: r["tests"][0]["engine"].update(reported={"mean": "fast"}), "reported.mean", "not of type"),
    "Infinity": (lambda r: r["tests"][0]["engine"].update(reported={"mean": math.inf}), "reported.mean", "not a finite "
                 "number"),
    "-512": (lambda r: r["tests"][0]["engine"].update(reported={"mean": -512}), "reported.mean", "minimum"),
    "NaN sample": (lambda r: r["tests"][0]["samples"][0]["engine"].update(x=math.nan), "samples[0].engine.x",
                   "not a finite number"),
    "negative ns": (lambda r: r["tests"][0]["samples"][0].update(ns=-5), "samples[0].ns", "minimum"),
    "status": (lambda r: r.update(status="great"), "status", "is not one of"),
    "kind": (lambda r: r["tests"][0].update(kind="zz"), "kind", "is not one of"),
    "model id": (lambda r: r["model"].update(id="0" * 64), "model.id", "not the model's sha256"),
    "deep": (lambda r: r["options"].update(deep=json.loads("[" * 300 + "]" * 300)), "options.deep", "nested over"),
}


@pytest.mark.parametrize("case", BAD_VALUES)
def test_a_resealed_bundle_with_a_bad_value_stores_nothing(case, bundle, tmp_path, registry_url):
    change, *needles = BAD_VALUES[case]
    document = copy(bundle)
    change(document["runs"][0]["record"])
    refused(tmp_path, registry_url, reseal(document), *needles)


def test_negative_latencies_are_refused(bundle, tmp_path, registry_url):
    document = copy(bundle)
    request = {"sample_idx": 0, "idx": 0, "role": "load", "n_prompt": 8, "max_tokens": 2, "n_gen": 2, "send_ns": 5,
               "first_ns": -1, "end_ns": 3_000_000, "status": "ok", "error": None, "http_status": 200,
               "finish_reason": "length", "events": [[-1, 1], [2_000_000, 1]], "usage": {}, "engine": {}}
    document["runs"][0]["record"]["tests"][0]["requests"] = [request]
    refused(tmp_path, registry_url, reseal(document), "first_ns", "minimum")


def test_nesting_past_any_stack_is_one_line(tmp_path, registry_url):
    text = '{"format": "pdx-bundle", "runs": ' + "[" * 100_000 + "]" * 100_000 + "}"
    refused(tmp_path, registry_url, text, "nested too deep")


def test_two_different_runs_with_one_id_are_refused_and_identical_copies_count_once(bundle, tmp_path, registry_url):
    document = copy(bundle)
    twin = copy(document["runs"][0])
    twin["record"]["command"] = "pdx bench --something-else"
    document["runs"].append(twin)
    refused(tmp_path, registry_url, reseal(document), "have one id")
    same = copy(bundle)
    same["runs"].append(copy(same["runs"][0]))
    (tmp_path / "same.json").write_text(json.dumps(same))
    done = json.loads(pdx_here("import", str(tmp_path / "same.json"), "--registry", registry_url, "--json"))
    assert len(done["added"]) == len(bundle["runs"]) and done["skipped"] == [bundle["runs"][0]["record"]["id"]]


def test_a_model_sha256_naming_another_model_is_refused(bundle, tmp_path, registry_url):
    sha = [e["record"]["model"]["sha256"] for e in bundle["runs"]]
    one, two = [i for i, s in enumerate(sha) if sha.count(s) == 2]  # two measured runs of one model
    first = copy(bundle)
    first["runs"] = [first["runs"][one]]
    (tmp_path / "first.json").write_text(json.dumps(first))
    pdx_here("import", str(tmp_path / "first.json"), "--registry", registry_url)
    other = copy(bundle)
    other["runs"] = [other["runs"][two]]
    other["runs"][0]["record"]["model"]["n_layers"] += 1
    path = tmp_path / "other.json"
    path.write_text(json.dumps(reseal(other)))
    assert_one_line_error(run_pdx_here("import", str(path), "--registry", registry_url), "n_layers",
                          "that sha256 is known as a model")
    assert len(json.loads(pdx_here("runs", "--registry", registry_url, "--json"))) == 1
    within = copy(bundle)  # two records of one write that disagree about one model
    within["runs"][two]["record"]["model"]["n_layers"] += 1
    refused_here = tmp_path / "within.json"
    refused_here.write_text(json.dumps(reseal(within)))
    assert_one_line_error(run_pdx_here("import", str(refused_here), "--registry", f"sqlite:///{tmp_path / 'x.db'}"),
                          "n_layers")


def test_pulling_from_a_registry_that_does_not_exist_fails(tmp_path):
    local = f"sqlite:///{tmp_path / 'local.sqlite'}"
    assert_one_line_error(run_pdx_here("registry", "pull", str(tmp_path / "typo.db"), "--registry", local),
                          "no registry at", "does not exist")
    assert not (tmp_path / "typo.db").exists()


CRAFTED = {
    "reported": ("update tests set engine = ? where ordinal = 0", ['{"reported": {"mean": "fast"}}'],
                 "reported.mean"),
    "negative": ("update samples set ns = ?", [-7], "ns"),
    "nan": ("update samples set engine = ?", ['{"x": NaN}'], ""),
    "date": ("update runs set created_at = ?", ["garbage"], "cannot read run"),
    "status": ("update runs set status = ?", ["great"], "status"),
}


@pytest.mark.parametrize("case", CRAFTED)
def test_a_crafted_registry_is_checked_when_pulled(case, tmp_path, tiny_gguf):
    source = tmp_path / "crafted.sqlite"
    fill(f"sqlite:///{source}", tiny_gguf)
    sql, params, needle = CRAFTED[case]
    with sqlite3.connect(source) as db:
        db.execute(sql, params)
    local = f"sqlite:///{tmp_path / 'local.sqlite'}"
    assert_one_line_error(run_pdx_here("registry", "pull", str(source), "--registry", local), needle)
    assert json.loads(pdx_here("runs", "--registry", local, "--json")) == []


def test_a_benchmark_test_with_a_bad_value_is_refused_before_it_is_saved(tmp_path, tiny_gguf):
    registry = Registry(f"sqlite:///{tmp_path / 'r.sqlite'}")
    run_id = registry.start_run(make_start(identify(tiny_gguf)))
    bad = TestOutcome(ordinal=0, test=TestSpec(8, 0), warmup=0,
                      samples=[Sample(ns=1000, n_prompt=8, n_gen=0, engine={"rate": math.nan})])
    with pytest.raises(RecordError, match=r"pp8 of run .*samples\[0\]\.engine\.rate"):
        registry.save_test(run_id, bad.to_record())
    registry.save_test(run_id, outcome(0, TestSpec(8, 0)).to_record())
    assert [t["name"] for t in read_run(registry, run_id)["tests"]] == ["pp8"]
    start = make_start(identify(tiny_gguf))
    start.threads = 2**70
    with pytest.raises(RecordError, match="threads"):
        registry.start_run(start)


def test_importer_output_goes_through_the_same_check(bundle):
    record = copy(bundle)["runs"][0]["record"]
    record["tests"][0]["samples"][0]["ns"] = 0
    with pytest.raises(RecordError, match=r"^vllm\.json: run 0 \(\w+\): tests\[0\]\.samples\[0\]\.ns"):
        check_records([record], "vllm.json")


def test_value_helpers_for_readers_of_other_tools_files():
    assert finite_number("1.5", "avg_ts") == 1.5 and count("12", "n_prompt") == 12 and count(3.0, "n") == 3
    assert timestamp("2024-05-01T10:00:00Z", "test_time").startswith("2024-05-01T10:00:00")
    for bad, needle in (("fast", "not a number"), (math.nan, "not a finite"), ("Infinity", "not a finite"),
                        (-512, "below 0"), (True, "not a number"), (10**400, "too large")):
        with pytest.raises(RecordError, match=needle):
            finite_number(bad, "avg_ts")
    for bad in ("²", "1.2.3", 2.5, None, "-1", 2**63):
        with pytest.raises(PdxError, match="n_threads"):
            count(bad, "n_threads")
    with pytest.raises(RecordError, match="test_time"):
        timestamp("2024-13-45", "test_time")


def _old_content_id(record: dict) -> str:
    """Content ids as pdx made them before they were versioned: the whole record less its labels."""
    return digest({k: v for k, v in record.items() if k not in ("id", "tags", "provenance", "pdx_version")})[:32]


def test_content_ids_are_what_they_were_and_ignore_fields_added_later():
    """A run holding none of the measurements version 2 added keeps the id it had before ids were
    versioned; a field no version hashes changes no id; every measurement version 2 added does."""
    from pdx.registry.bundle import content_id
    from pdx.registry.importers import read_file

    from test_importers import DATA

    imported = [r for name in ("vllm_bench_serve_detailed.json", "vllm_bench_serve_summary.json",
                               "mlx_lm_benchmark_b1.txt") for r in read_file(DATA / name)[1]]
    for record in imported:
        assert content_id(record) == content_id(record, 1) == _old_content_id(record) == record["id"]
        grown = copy(record) | {"energy_j": 12.5}  # a field of a later pdx, in no version yet
        grown["model"]["n_experts"] = 8
        for test in grown["tests"]:
            for sample in test["samples"]:
                sample["energy_j"] = 1.0
        assert content_id(grown) == record["id"] != _old_content_id(grown)
        test = record["tests"][0]
        added = [("conditions", {"load": 0.1}), ("energy", {"joules": {}})]
        added += [(f"requests[0].{name}", 1) for name in ("scheduled_ns", "shard", "reasoning_ns", "answer_ns",
                                                          "n_reasoning") if test.get("requests")]
        for where, value in added:
            measured = copy(record)
            target = measured["tests"][0]["requests"][0] if where.startswith("requests") else measured["tests"][0]
            target[where.split(".")[-1]] = value
            assert content_id(measured) != record["id"] == content_id(measured, 1), where
        changed = copy(record)
        changed["tests"][0]["n_prompt"] += 1
        assert content_id(changed) != record["id"]


def test_the_content_id_hashes_every_stored_measurement():
    """Every field of a run record but its labels is in the current content id's version, so no stored
    measurement can be edited under a file's name. A new field joins a new version, with its update step."""
    from pdx.registry import fields

    hashed = fields.CONTENT_ID_FIELDS[fields.CONTENT_ID_VERSION]
    levels = {"run": fields.RUN_FIELDS, "test": fields.TEST_FIELDS, "sample": fields.SAMPLE_FIELDS,
              "request": fields.REQUEST_FIELDS, "model": fields.MODEL_FIELDS}
    for level, names in levels.items():
        left_out = [n for n in names if n not in hashed[level] and not (level == "run" and n in fields.NOT_CONTENT)]
        assert not left_out, f"{level} fields no content id hashes: {left_out}"


def test_an_old_file_imported_again_after_the_importer_learns_a_field_adds_nothing(registry_url, monkeypatch):
    from pdx.registry.bundle import content_id
    from pdx.registry.importers import common, vllm_bench

    from test_importers import DATA

    source = str(DATA / "vllm_bench_serve_detailed.json")
    first = json.loads(pdx_here("import", source, "--registry", registry_url, "--json"))
    made = common.imported_run

    def with_a_new_field(*args, **kwargs):  # as a later pdx would: one more figure per test
        record = made(*args, **kwargs)
        record["tests"][0]["energy_j"] = 3.5
        return record | {"id": content_id(record)}

    monkeypatch.setattr(vllm_bench, "imported_run", with_a_new_field)
    (record,) = vllm_bench.read(source, json.loads(open(source).read()), open(source).read())
    assert record["tests"][0]["energy_j"] == 3.5 and record["id"] == first["added"][0]
    present = Registry(registry_url).existing_ids([record["id"]])
    assert present == set(first["added"])  # so the importer's run is the one stored: it is skipped


@pytest.mark.parametrize("name", ["aiperf_profile_export.json", "guidellm_poisson.json"])
def test_a_run_an_older_pdx_stored_under_its_version_1_id_is_not_imported_again(registry_url, monkeypatch, name):
    """Requests with a schedule: their run's content id of version 2 is not version 1's. A registry an
    older pdx (content ids of version 1) filled finds the file's run by its old id: nothing is added, the
    run keeps the id it was stored by, and the skip names it."""
    from pdx.registry import bundle

    from test_importers import DATA

    monkeypatch.setattr(bundle, "CONTENT_ID_VERSION", 1)  # the older pdx
    (old_id,) = pdx_import(registry_url, DATA / name)["added"]
    monkeypatch.undo()
    again = pdx_import(registry_url, DATA / name)
    assert again["added"] == [] and again["skipped"] == [old_id]
    assert [r["id"] for r in json.loads(pdx_here("runs", "--registry", registry_url, "--json"))] == [old_id]
    fresh = read_file(DATA / name)[1][0]
    assert fresh["id"] == bundle.content_id(fresh) != old_id == bundle.content_id(fresh, 1)


def test_the_record_fields_and_the_bundle_schema_agree():
    from pdx.registry import fields
    from pdx.registry.bundle_schema import load_schema

    defs = load_schema()["$defs"]
    for name, listed in (("run", fields.RUN_FIELDS), ("test", fields.TEST_FIELDS), ("sample", fields.SAMPLE_FIELDS),
                         ("request", fields.REQUEST_FIELDS), ("model", fields.MODEL_FIELDS)):
        assert set(defs[name]["properties"]) == set(listed), name
    for version, levels in fields.CONTENT_ID_FIELDS.items():
        assert set(levels["run"]) | set(fields.NOT_CONTENT) == set(fields.RUN_FIELDS)


def test_each_record_type_says_which_fields_a_bundle_may_lack():
    """A field a record type marks NotRequired is one the bundle schema does not require (records made
    before it existed lack it), and every other field is required, at every level."""
    from pdx.contract.record import LEVELS
    from pdx.registry.bundle_schema import load_schema

    defs = load_schema()["$defs"]
    for name, level in LEVELS.items():
        assert set(defs[name]["required"]) == level.__required_keys__, name


def test_the_run_and_model_tables_hold_what_their_record_types_say():
    """The run and model tables are laid out for storage, not generated; a field they share with their
    record type has the same name there and holds null exactly where the type allows it."""
    from typing import Union, get_args, get_origin, get_type_hints

    from pdx.contract import record
    from pdx.registry.schema import Model, Run

    def nullable(level, name):
        hint = get_type_hints(level)[name]
        return get_origin(hint) is Union and type(None) in get_args(hint)

    model_columns = Model.__table__.columns
    assert set(model_columns.keys()) == set(record.Model.__annotations__) - {"sha256"}
    run_columns = Run.__table__.columns
    shared = set(run_columns.keys()) & set(record.Run.__annotations__)
    assert shared >= {"id", "status", "created_at", "finished_at", "threads", "error", "ceiling_basis"}
    for table, level, names in ((Model, record.Model, model_columns.keys()), (Run, record.Run, shared)):
        for name in names:
            assert table.__table__.columns[name].nullable == nullable(level, name), (level.__name__, name)


def test_a_sample_column_gives_the_rule_the_schema_spells_out():
    """A sample field added to the table gets its bundle rule from the column (no schema edit): the
    rule derived for each column of today's table is the type the schema writes out for it."""
    import json

    from pdx.registry.bundle_schema import SCHEMA_FILE, column_rule
    from pdx.registry.schema import SampleRow

    written = json.loads(SCHEMA_FILE.read_text())["$defs"]["sample"]["properties"]
    for name in ("ns", "n_prompt", "n_gen", "prompt_ns", "gen_ns"):
        assert column_rule(SampleRow.__table__.columns[name])["type"] == written[name]["type"], name
    assert column_rule(SampleRow.__table__.columns["engine"]) == {}  # a JSON column's shape is the schema's to say


def test_a_test_field_is_one_line_in_its_record_and_its_migration(tmp_path):
    """Issue 28's acceptance: a copy of pdx gains a test field by one line in its record type and a
    migration, nothing else; a bundle carrying it is read, stored in the row (its column generated from
    the record), shown by `pdx show --json`, written to a bundle (the schema derives its rule) and to
    the site's JSON."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pdx
    from pdx.registry.migrate import head_revision

    from test_importers import DATA

    copy = tmp_path / "pkg" / "pdx"
    shutil.copytree(Path(pdx.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    declared = copy / "contract" / "record.py"
    anchor = "    energy: NotRequired[Optional[Energy]]"
    text = declared.read_text()
    assert text.count(anchor) == 1
    declared.write_text(text.replace(
        anchor, "    probe_note: NotRequired[Optional[Annotated[dict[str, Any], Doc('what the probe "
                                     "saw')]]]\n" + anchor))
    (copy / "registry" / "migrations" / "versions" / "0099_probe_note.py").write_text(
        "from alembic import op\nimport sqlalchemy as sa\n\nrevision = '0099'\n"
        f"down_revision = {head_revision()!r}\n"
        "branch_labels = None\ndepends_on = None\n\n\ndef upgrade():\n"
        "    op.add_column('tests', sa.Column('probe_note', sa.JSON(), nullable=True))\n\n\n"
        "def downgrade():\n    op.drop_column('tests', 'probe_note')\n")
    env = dict(os.environ, PYTHONPATH=str(copy.parent))

    def pdx_copy(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "pdx", *args], capture_output=True, text=True, env=env,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    first, second = f"sqlite:///{tmp_path / 'a.sqlite'}", f"sqlite:///{tmp_path / 'b.sqlite'}"
    pdx_copy("import", str(DATA / "llama_bench_tiny.json"), "--registry", first)
    bundle = tmp_path / "run.pdx.json"
    pdx_copy("export", "-o", str(bundle), "--registry", first)
    data = json.loads(bundle.read_text())
    entry = data["runs"][0]
    entry["record"]["tests"][0]["probe_note"] = {"seen": 1}
    entry["sha256"] = digest(entry["record"])  # the field joins no content id: the run keeps its id
    bundle.write_text(json.dumps(data))
    pdx_copy("import", str(bundle), "--registry", second)
    run_id = entry["record"]["id"]
    shown = json.loads(pdx_copy("show", run_id, "--registry", second, "--json"))
    assert shown["tests"][0]["probe_note"] == {"seen": 1} and shown["tests"][1]["probe_note"] is None
    assert "probe_note" not in pdx.registry.fields.TEST_FIELDS  # this interpreter's pdx is the unchanged one
    rows = sqlite3.connect(tmp_path / "b.sqlite").execute("select probe_note from tests order by ordinal").fetchall()
    assert rows[0] == ('{"seen": 1}',) and all(row == (None,) for row in rows[1:])
    again = tmp_path / "again.pdx.json"
    pdx_copy("export", "-o", str(again), "--registry", second)
    assert json.loads(again.read_text())["runs"][0]["record"]["tests"][0]["probe_note"] == {"seen": 1}
    pdx_copy("publish", str(tmp_path / "site"), "--registry", second)
    site = json.loads((tmp_path / "site" / "runs" / f"{run_id}.json").read_text())["run"]
    assert site["tests"][0]["probe_note"] == {"seen": 1}
    assert "`probe_note` (what the probe saw)" in (tmp_path / "site" / "DATA.md").read_text()


FIGURE_BACKEND = """
import time

from pdx.contract.backend import Availability, Backend, EngineInfo, Sample


class FigureBackend(Backend):
    name = "figure"
    engine = "time.sleep"
    model_formats = ("gguf",)

    @classmethod
    def availability(cls, options=None):
        return Availability(True, version="1")

    def load(self, model):
        return EngineInfo(engine=self.engine, version="1")

    def run(self, test, repetitions, warmup):
        for i in range(warmup + repetitions):
            t0 = time.perf_counter_ns()
            time.sleep(0.001)
            if i >= warmup:
                yield Sample(ns=time.perf_counter_ns() - t0, n_prompt=test.n_prompt * test.batch,
                             n_gen=test.n_gen * test.batch, figures={"queue_ns": 1000 * (i - warmup + 1)})


def pdx_register_backends(register):
    register(FigureBackend)
"""


def test_a_sample_figure_is_one_line_in_its_record_and_its_migration(tmp_path, tiny_gguf):
    """Issue 41's acceptance: a copy of pdx gains a per-sample figure by one line in its record type and a
    migration, nothing else, and a backend (a plugin, through its entry point) that fills it by name in
    Sample.figures: it is stored in its column, summarised in the test's statistics, exported in a
    bundle, shown by `pdx show` with its description, and written to the site's JSON and DATA.md."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pdx
    from pdx.registry.migrate import head_revision

    copy = tmp_path / "pkg" / "pdx"
    shutil.copytree(Path(pdx.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    declared = copy / "contract" / "record.py"
    anchor = "    gen_ns: Optional[Int64]\n"
    text = declared.read_text()
    assert text.count(anchor) == 1
    declared.write_text(text.replace(anchor, anchor + "    queue_ns: NotRequired[Optional[Annotated[Int64, "
                                     "Doc('how long the repetition waited for the engine')]]]\n"))
    (copy / "registry" / "migrations" / "versions" / "0099_queue_ns.py").write_text(
        "from alembic import op\nimport sqlalchemy as sa\n\nrevision = '0099'\n"
        f"down_revision = {head_revision()!r}\n"
        "branch_labels = None\ndepends_on = None\n\n\ndef upgrade():\n"
        "    op.add_column('samples', sa.Column('queue_ns', sa.BigInteger(), nullable=True))\n\n\n"
        "def downgrade():\n    op.drop_column('samples', 'queue_ns')\n")
    # The backend: a plugin as any is installed, its module and its distribution's entry point.
    (tmp_path / "pkg" / "figure_backend.py").write_text(FIGURE_BACKEND)
    dist = tmp_path / "pkg" / "pdx_figure-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pdx-figure\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[pdx]\nfigure = figure_backend\n")
    env = dict(os.environ, PYTHONPATH=str(copy.parent))

    def pdx_copy(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "pdx", *args], capture_output=True, text=True, env=env,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    registry = f"sqlite:///{tmp_path / 'a.sqlite'}"
    pdx_copy("bench", "--backend", "figure", "-m", str(tiny_gguf), "-p", "8", "-n", "0", "-r", "3",
             "--hardware", "M1 Max", "--no-energy", "--registry", registry, "--json")
    (run_id,) = [run["id"] for run in json.loads(pdx_copy("runs", "--json", "--registry", registry))]
    shown = json.loads(pdx_copy("show", run_id, "--registry", registry, "--json"))
    (test,) = shown["tests"]
    assert [s["queue_ns"] for s in test["samples"]] == [1000, 2000, 3000]
    assert test["stats"]["figures"]["queue_ns"]["mean"] == 2000
    assert "queue_ns" not in pdx.registry.fields.SAMPLE_FIELDS  # this interpreter's pdx is the unchanged one
    rows = sqlite3.connect(tmp_path / "a.sqlite").execute("select queue_ns from samples order by idx").fetchall()
    assert rows == [(1000,), (2000,), (3000,)]
    assert "queue_ns (how long the repetition waited for the engine): 2000 ± 1e+03 over 3 samples" in \
        pdx_copy("show", run_id, "--registry", registry)
    bundle = tmp_path / "run.pdx.json"
    pdx_copy("export", "-o", str(bundle), "--registry", registry)
    exported = json.loads(bundle.read_text())["runs"][0]["record"]["tests"][0]["samples"]
    assert [s["queue_ns"] for s in exported] == [1000, 2000, 3000]
    pdx_copy("import", str(bundle), "--registry", f"sqlite:///{tmp_path / 'b.sqlite'}")  # the schema takes it
    pdx_copy("publish", str(tmp_path / "site"), "--registry", registry)
    site = json.loads((tmp_path / "site" / "runs" / f"{run_id}.json").read_text())["run"]
    assert site["tests"][0]["stats"]["figures"]["queue_ns"]["mean"] == 2000
    assert "`queue_ns` (how long the repetition waited for the engine)" in (tmp_path / "site" / "DATA.md").read_text()


def test_the_runner_s_types_carry_every_stored_sample_and_request_column():
    """Samples and requests cross from the runner into the registry by their column names: each column
    is a field (or property) of pdx.contract.backend.Sample and pdx.domain.serving.records.RequestRecord, and a test
    outcome refuses a field it does not declare (set by a misspelt name, it would never be stored)."""
    from pdx.contract.backend import Sample
    from pdx.registry.fields import REQUEST_COLUMNS, SAMPLE_FIELDS
    from pdx.measure.runner import TestOutcome
    from pdx.domain.serving.records import RequestRecord

    sample = Sample(ns=1_000, n_prompt=8, n_gen=0)
    request = RequestRecord(idx=0, n_prompt=8, max_tokens=4)
    assert [k for k in SAMPLE_FIELDS if not hasattr(sample, k)] == []
    assert [k for k in REQUEST_COLUMNS if k != "sample_idx" and not hasattr(request, k)] == []
    outcome = TestOutcome(0, TestSpec(8, 0), warmup=0)
    outcome.energy = {"meters": {}}
    with pytest.raises(AttributeError):
        outcome.enrgy = {"meters": {}}


def test_a_model_s_facts_are_the_fields_of_its_record():
    """What pdx reads of a model file (:class:`pdx.domain.models.ModelInfo`) is its record's model entry but
    its id (the record names it by content: the id is the sha256)."""
    from dataclasses import fields as dataclass_fields

    from pdx.contract import record
    from pdx.domain.models import ModelInfo

    assert {f.name for f in dataclass_fields(ModelInfo)} == set(record.Model.__annotations__) - {"id"}


def test_the_objects_a_test_carries_are_the_ones_their_record_types_declare(registry_url):
    """Conditions and energy as the bundle schema writes them out, and ceilings as pdx computes them
    (a real forum table, judged against its chip's catalog figures, one source and several), hold the
    fields their record types declare, every required one among them."""
    from pdx.contract import record
    from pdx.registry.bundle_schema import load_schema

    from conftest import pdx_import, show
    from test_importers import DATA

    defs = load_schema()["$defs"]
    for name, level in record.OBJECTS.items():
        assert set(defs[name]["properties"]) == set(level.__annotations__), name
        assert set(defs[name].get("required", ())) == level.__required_keys__, name
    done = pdx_import(registry_url, DATA / "llama_bench_forum_m1max.md", "--hardware", "M1 Max")
    judged = [t["ceilings"] for run_id in done["added"] for t in show(registry_url, run_id)["tests"]]
    judged += [s for c in judged for s in (c.get("sources") or {}).values()]
    assert judged and all(c["ceiling"] for c in judged)
    for ceilings in judged:
        assert record.Ceilings.__required_keys__ <= set(ceilings) <= set(record.Ceilings.__annotations__), ceilings


def test_a_record_type_s_fields_become_columns_of_their_kind():
    """Each kind of field a record type may declare gets its column; a field older records lack is
    refused unless its rows can hold NULL for them (or it is an object or list with a default)."""
    from typing import Annotated, Any, Optional

    import pytest
    from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Float, Integer, String, Text
    from typing_extensions import NotRequired, TypedDict

    from pdx.contract.record import Doc, Int64, Time, chars
    from pdx.registry.schema import record_columns

    class Level(TypedDict):
        count: int
        big: Int64
        share: float
        flag: bool
        text: str
        name: Annotated[str, chars(12)]
        when: Time
        note: NotRequired[Optional[Annotated[float, Doc("a later figure")]]]
        pep604: NotRequired[int | None]
        extra: NotRequired[dict[str, Any]]
        items: list[Any]

    columns = {c.name: c for c in record_columns(Level)}
    kinds = {"count": Integer, "big": BigInteger, "share": Float, "flag": Boolean, "text": Text, "name": String,
             "when": DateTime, "note": Float, "pep604": Integer, "extra": JSON, "items": JSON}
    assert list(columns) == list(kinds)
    for name, kind in kinds.items():
        assert type(columns[name].type) is kind, name
    assert columns["name"].type.length == 12 and columns["note"].comment == "a later figure"
    assert [n for n, c in columns.items() if c.nullable] == ["note", "pep604"]
    assert columns["extra"].default.arg.__name__ == "dict"

    class Later(TypedDict):
        count: NotRequired[int]

    with pytest.raises(TypeError, match="Later.count: a field older records lack is Optional"):
        record_columns(Later)


def test_a_test_name_is_as_long_as_the_record_allows_in_the_bundle_schema_too():
    from pdx.contract.record import TEST_NAME_MAX
    from pdx.registry.bundle_schema import load_schema

    assert load_schema()["$defs"]["test"]["properties"]["name"]["maxLength"] == TEST_NAME_MAX


def test_an_energy_record_s_meters_are_the_objects_the_bundle_schema_and_meters_describe():
    """The record type said an energy record's meters were text; they are each meter's description
    (the type checker found it): its record type, the bundle schema and Meter.describe agree."""
    from pdx.contract.meter import Meter
    from pdx.contract.record import Energy, EnergyMeter
    from pdx.registry.bundle_schema import load_schema
    from typing_extensions import get_type_hints

    items = load_schema()["$defs"]["energy"]["properties"]["meters"]["items"]
    assert get_type_hints(Energy)["meters"] == list[EnergyMeter]
    assert set(items["properties"]) == set(EnergyMeter.__annotations__)
    assert set(items["required"]) == EnergyMeter.__required_keys__
    described = Meter("gpu0", "gpu board", "NVIDIA H200", lambda: 0.0, "nvml").describe()
    assert set(described) == set(EnergyMeter.__annotations__)


def test_the_columns_a_generated_table_declares_for_type_checkers_are_its_columns():
    """The tables generated from record types declare the columns code reads by name (for mypy): each
    names a column of the table, of its Python type, null exactly where the annotation allows it."""
    from typing import Union, get_args, get_origin, get_type_hints

    from sqlalchemy import JSON
    from sqlalchemy.orm import Mapped

    from pdx.registry import schema

    for table in (schema.TestResult, schema.SampleRow, schema.RequestRow):
        columns = table.__table__.columns
        for name, hint in get_type_hints(table, vars(schema)).items():
            if get_origin(hint) is not Mapped or name in table.__mapper__.relationships:
                continue
            (held,) = get_args(hint)
            optional = get_origin(held) is Union and type(None) in get_args(held)
            assert name in columns and columns[name].nullable == optional, (table.__name__, name)
            kind = get_origin(held) or held
            if optional:
                (kind,) = [k for k in get_args(held) if k is not type(None)]
            expected = (dict, list) if isinstance(columns[name].type, JSON) else (columns[name].type.python_type,)
            assert kind in expected, (table.__name__, name, kind)
