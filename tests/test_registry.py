"""The registry on every database pdx supports: SQLite always, PostgreSQL
too under tox -e postgres (see conftest's ``registry_url``)."""

import multiprocessing
import sqlite3
import subprocess
import sys
import uuid

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from pdx.measure import environment
from pdx.measure import hardware
from pdx.registry.records import environment_id
from pdx.contract.backend import EngineInfo, Sample
from pdx.contract.errors import PdxError, RegistryError
from pdx.domain.models import identify
from pdx.registry import Registry, RunStart
from pdx.registry.migrate import head_revision
from pdx.registry.schema import Base
from pdx.measure.runner import TestOutcome
from pdx.domain.workload import TestSpec

from conftest import assert_one_line_error, run_pdx
from pdx.reports.results import read_run, read_runs

TABLES = {"runs", "run_tags", "run_leases", "tests", "samples", "requests", "models", "hardware", "environments",
          "alembic_version"}


def count(url: str, table: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(f"select count(*) from {table}")).scalar_one()
    finally:
        engine.dispose()


def make_start(model, run_id=None, tags=("t1",)):
    manifest = environment.collect(2, 42, ["pdx", "bench"])
    return RunStart(
        id=run_id or uuid.uuid4().hex, backend="test-backend", engine=EngineInfo("engine", "1.0", "abc123"),
        model=model, hardware=hardware.detect(), environment=manifest,
        environment_id=environment_id(manifest), workload={"tests": ["pp64"], "repetitions": 2,
                                                                        "warmup": 0, "seed": 42},
        threads=2, options={"k": "v"}, command="pdx bench", pdx_version="0.1.0", tags=tags,
    )


def outcome(ordinal, test, n=3, base=1_000_000):
    samples = [Sample(ns=base + i, n_prompt=test.n_prompt, n_gen=test.n_gen, engine={"x": i}) for i in range(n)]
    return TestOutcome(ordinal=ordinal, test=test, warmup=1, samples=samples)


def test_blank_database_is_built_by_the_migrations(registry_url):
    Registry(registry_url).close()
    engine = create_engine(registry_url)
    assert set(inspect(engine).get_table_names()) == TABLES
    with engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == head_revision()
        # The migrations build exactly what the models describe.
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    engine.dispose()


def test_an_up_to_date_registry_is_opened_without_alembic(registry_url, tmp_path):
    """Opening checks the stored revision by one SELECT against the head the version files declare
    (read as text, the same head Alembic finds); Alembic runs only where the two differ."""
    from pdx.registry import migrate

    assert migrate.declared_head() == head_revision()
    Registry(registry_url).close()
    engine = create_engine(registry_url)
    assert migrate.is_current(engine)
    with engine.begin() as conn:
        conn.execute(text("update alembic_version set version_num = '0008'"))
    assert not migrate.is_current(engine)  # Alembic's turn: it would run 0009
    with engine.begin() as conn:
        conn.execute(text("insert into alembic_version values (:head)"), {"head": head_revision()})
    assert not migrate.is_current(engine)  # two rows: Alembic's turn too (it refuses them)
    with engine.begin() as conn:
        conn.execute(text("delete from alembic_version where version_num = '0008'"))
    assert migrate.is_current(engine)
    engine.dispose()
    assert not migrate.is_current(create_engine(f"sqlite:///{tmp_path / 'blank.sqlite'}"))
    code = ("import sys\nfrom pdx.registry import Registry\nRegistry(sys.argv[1]).close()\n"
            "print(' '.join(m for m in ('alembic', 'mako') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, registry_url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "", done.stdout + done.stderr


def test_round_trip_keeps_every_sample(registry_url, tiny_gguf):
    registry = Registry(registry_url)
    model = identify(tiny_gguf)
    run_id = registry.start_run(make_start(model))
    pp, tg = TestSpec(64, 0), TestSpec(0, 16, depth=32)
    registry.save_test(run_id, outcome(0, pp).to_record())
    registry.save_test(run_id, outcome(1, tg, n=2, base=2_000_000).to_record())
    registry.finish_run(run_id, "complete")
    run = read_run(registry, run_id[:8])
    assert run["id"] == run_id and run["status"] == "complete" and run["finished_at"]
    assert [t["name"] for t in run["tests"]] == ["pp64", "tg16@d32"]
    assert [s["ns"] for s in run["tests"][0]["samples"]] == [1_000_000, 1_000_001, 1_000_002]
    assert run["tests"][1]["samples"][1]["engine"] == {"x": 1}
    assert run["tests"][0]["stats"]["rate"]["n"] == 3
    assert run["model"]["sha256"] == model.sha256 and run["model"]["n_params"] == model.n_params
    assert run["engine"] == {"name": "engine", "version": "1.0", "commit": "abc123", "settings": {}, "details": {}}
    assert run["tags"] == ["t1"] and run["options"] == {"k": "v"}
    listed = read_runs(registry, tag="t1")
    assert [r["id"] for r in listed] == [run_id]
    assert "samples" not in listed[0]["tests"][0] and listed[0]["tests"][0]["stats"]["rate"]["n"] == 3
    assert read_runs(registry, backend="other") == []
    assert [r["id"] for r in read_runs(registry, model="tiny")] == [run_id]


def test_finishing_a_run_the_registry_lacks_names_it(registry_url):
    """A run removed while it ran (or a registry replaced under it) is a one-line error naming the run,
    not an AttributeError on None (the type checker found finish_run read a row that may be missing)."""
    registry = Registry(registry_url)
    with pytest.raises(RegistryError, match="cannot finish run 0123abcd: it is not in"):
        registry.finish_run("0123abcd", "complete")


def test_runs_filter_by_hardware_and_can_carry_samples(registry_url, tiny_gguf):
    registry = Registry(registry_url)
    start = make_start(identify(tiny_gguf))
    start.hardware = {**start.hardware, "id": "feedbeef00000000", "name": "Test Chip 9000"}
    run_id = registry.start_run(start)
    registry.save_test(run_id, outcome(0, TestSpec(64, 0)).to_record())
    other = registry.start_run(make_start(identify(tiny_gguf)))
    assert [r["id"] for r in read_runs(registry, hardware="Chip 9000")] == [run_id]
    assert [r["id"] for r in read_runs(registry, hardware="feedbeef")] == [run_id]
    assert {r["id"] for r in read_runs(registry)} == {run_id, other}
    assert read_runs(registry, hardware="no such chip") == []
    (with_samples,) = read_runs(registry, hardware="feedbeef", samples=True)
    assert [s["ns"] for s in with_samples["tests"][0]["samples"]] == [1_000_000, 1_000_001, 1_000_002]


def test_reading_many_runs_gives_what_reading_one_gives(registry_url, tiny_gguf):
    # runs() reads rows in bulk; get_run() through the ORM: the records must not differ.
    registry = Registry(registry_url)
    model = identify(tiny_gguf)
    for tags in (("a", "b"), ()):
        run_id = registry.start_run(make_start(model, tags=tags))
        registry.save_test(run_id, outcome(0, TestSpec(64, 0)).to_record())
        registry.save_test(run_id, outcome(1, TestSpec(0, 16, depth=32, batch=2), n=2).to_record())
        registry.finish_run(run_id, "complete")
    listed = registry.runs()
    assert len(listed) == 2 and listed[0]["created_at"] >= listed[1]["created_at"]
    assert listed == [registry.get_run(r["id"]) for r in listed]
    # The registry gives what is stored; statistics are the readers' (pdx.reports.results), derived the same
    # from either path.
    assert all("stats" not in t and t["samples"] for r in listed for t in r["tests"])
    assert read_runs(registry, samples=True) == [read_run(registry, r["id"]) for r in listed]
    assert [r["id"] for r in registry.runs(tag="a")] == [listed[1]["id"]]
    assert read_runs(registry, limit=1)[0]["id"] == listed[0]["id"]
    assert registry.run_ids() == [r["id"] for r in listed] and registry.run_ids(tag="a") == [listed[1]["id"]]


def test_run_ids_resolve_by_unique_prefix(registry_url, tiny_gguf):
    registry = Registry(registry_url)
    model = identify(tiny_gguf)
    registry.start_run(make_start(model, "abcd1111" + "0" * 24))
    registry.start_run(make_start(model, "abcd2222" + "0" * 24))
    assert registry.resolve("abcd1") == "abcd1111" + "0" * 24
    with pytest.raises(PdxError, match="ambiguous"):
        registry.resolve("abcd")
    with pytest.raises(PdxError, match="no run"):
        registry.resolve("ffff")


def test_a_test_is_saved_whole_or_not_at_all(registry_url, tiny_gguf):
    registry = Registry(registry_url)
    run_id = registry.start_run(make_start(identify(tiny_gguf)))
    registry.save_test(run_id, outcome(0, TestSpec(64, 0)).to_record())
    with pytest.raises(Exception):
        registry.save_test(run_id, outcome(0, TestSpec(0, 8)).to_record())  # same ordinal: rejected
    run = read_run(registry, run_id)
    assert len(run["tests"]) == 1 and len(run["tests"][0]["samples"]) == 3
    assert count(registry_url, "samples") == 3


def _writer(url, model_path, n_runs, queue):
    try:
        model = identify(model_path)
        registry = Registry(url)
        ids = []
        for _ in range(n_runs):
            run_id = registry.start_run(make_start(model))
            for i in range(3):
                registry.save_test(run_id, outcome(i, TestSpec(64 + i, 0)).to_record())
            registry.finish_run(run_id, "complete")
            ids.append(run_id)
    except BaseException:  # named in the test's failure, not lost in a child's stderr
        import traceback

        queue.put(traceback.format_exc())
        raise
    queue.put(ids)


def test_eight_concurrent_writers_lose_nothing(registry_url, tiny_gguf):
    # The database is empty, not yet migrated: all eight race to migrate it,
    # then to insert the same model, hardware and environment rows.
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(registry_url, str(tiny_gguf), 8, queue)) for _ in range(8)]
    for p in procs:
        p.start()
    got = [queue.get(timeout=240) for _ in procs]
    failures = [g for g in got if isinstance(g, str)]
    assert not failures, "a writer failed:\n" + "\n".join(failures)
    ids = [i for g in got for i in g]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    registry = Registry(registry_url)
    stored = read_runs(registry, limit=1000)
    assert sorted(r["id"] for r in stored) == sorted(ids) and len(ids) == 64
    assert count(registry_url, "samples") == 64 * 3 * 3
    assert all(len(r["tests"]) == 3 and r["status"] == "complete" for r in stored)


def test_unreachable_and_invalid_registries_are_one_line_errors(tmp_path):
    with pytest.raises(RegistryError, match="does not exist"):
        Registry(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.sqlite'}")
    with pytest.raises(RegistryError, match="cannot use registry URL"):
        Registry("nosuchdb://x/y")
    line = assert_one_line_error(run_pdx("runs", "--registry", "postgresql://pdx:secret@127.0.0.1:1/pdx"),
                                 "cannot open registry")
    assert "secret" not in line


def test_a_plain_path_means_sqlite(tmp_path):
    registry = Registry(str(tmp_path / "plain.sqlite"))
    assert registry.url.startswith("sqlite:///") and (tmp_path / "plain.sqlite").exists()


def test_upgrading_a_registry_with_data_backs_it_up_first(tmp_path, tiny_gguf):
    path = tmp_path / "old.sqlite"
    registry = Registry(f"sqlite:///{path}")
    registry.start_run(make_start(identify(tiny_gguf)))
    registry.close()
    with sqlite3.connect(path) as conn:  # pretend it was made by an older pdx
        conn.execute("update alembic_version set version_num = '0000'")
    from pdx.registry import migrate

    engine = create_engine(f"sqlite:///{path}")
    with pytest.raises(migrate.SchemaProblem, match="'0000' is none this pdx knows"):
        migrate.upgrade(engine)  # '0000' is no known revision: refused before anything is touched
    engine.dispose()
    with sqlite3.connect(path) as conn:
        assert conn.execute("select count(*) from runs").fetchone()[0] == 1
        assert conn.execute("select version_num from alembic_version").fetchone()[0] == "0000"
    # A known older revision is backed up before it is upgraded: test_a_registry_from_before_ceilings_...


def test_ceilings_and_their_basis_are_stored_with_the_results(registry_url, tiny_gguf):
    registry = Registry(registry_url)
    basis = {"version": 1, "source": "probe", "bandwidth": 2e10, "flops": 1e11, "probe": {"threads": 2}}
    start = make_start(identify(tiny_gguf))
    start.ceiling_basis = basis
    run_id = registry.start_run(start)
    done = outcome(0, TestSpec(0, 16))
    done.ceilings = {"version": 1, "ceiling": 50.0, "bound": "memory", "fraction": 0.5, "phases": {}}
    registry.save_test(run_id, done.to_record())
    run = read_run(registry, run_id)
    assert run["ceiling_basis"] == basis
    assert run["tests"][0]["ceilings"]["bound"] == "memory" and run["tests"][0]["ceilings"]["fraction"] == 0.5
    assert read_runs(registry)[0]["tests"][0]["ceilings"]["ceiling"] == 50.0


def test_a_registry_from_before_ceilings_upgrades_and_keeps_its_runs(tmp_path, tiny_gguf):
    from alembic import command

    from pdx.registry import migrate

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    registry = Registry(url)
    run_id = registry.start_run(make_start(identify(tiny_gguf)))
    registry.save_test(run_id, outcome(0, TestSpec(64, 0)).to_record())
    registry.close()
    engine = create_engine(url)
    with engine.begin() as conn:  # back to the foundation's schema, as an older pdx left it
        config = migrate._config()
        config.attributes["connection"] = conn
        command.downgrade(config, "0001")
    assert "ceilings" not in {c["name"] for c in inspect(engine).get_columns("tests")}
    run = read_run(Registry(url), run_id)  # opening upgrades it
    assert run["ceiling_basis"] is None and run["tests"][0]["ceilings"] is None
    assert run["origin"] == "pdx" and run["provenance"] == {} and run["tests"][0]["adaptive"] is None  # 0003
    assert run["tests"][0]["spec"] == {} and run["tests"][0]["requests"] == []  # 0004
    assert run["tests"][0]["conditions"] is None  # 0005
    assert len(run["tests"][0]["samples"]) == 3 and (tmp_path / "old.sqlite.0001.bak").exists()


def test_request_records_are_stored_and_travel_with_the_run(tmp_path, tiny_gguf):
    from pdx.domain.serving.records import RequestRecord
    from pdx.domain.serving.spec import ServeSpec

    registry = Registry(f"sqlite:///{tmp_path / 'a.sqlite'}")
    run_id = registry.start_run(make_start(identify(tiny_gguf)))
    spec = ServeSpec("load", 8, 2, concurrency=2, n_requests=2, slo={"ttft": 100.0})
    done = RequestRecord(0, 8, 2, send_ns=5, first_ns=1_000_000, end_ns=3_000_000,
                         events=[(1_000_000, 1), (2_000_000, 1)], usage={"completion_tokens": 2})
    failed = RequestRecord(1, 8, 2, send_ns=9, end_ns=500, status="error", error="HTTP 500: boom", http_status=500)
    result = TestOutcome(ordinal=0, test=spec, warmup=0,
                         samples=[Sample(ns=4_000_000, n_prompt=8, n_gen=2, requests=[done])], requests=[failed])
    registry.save_test(run_id, result.to_record())
    registry.finish_run(run_id, "complete")
    (test,) = read_run(registry, run_id)["tests"]
    assert test["kind"] == "serve" and test["spec"]["concurrency"] == 2 and test["spec"]["slo"] == {"ttft": 100.0}
    assert [(r["sample_idx"], r["status"], r["events"]) for r in test["requests"]] == \
        [(0, "ok", [[1_000_000, 1], [2_000_000, 1]]), (None, "error", [])]
    assert test["stats"]["completed"] == 1 and test["stats"]["ttft_ms"]["median"] == 1.0
    from pdx.registry.bundle import make_bundle, read_bundle, schema_errors

    bundle = make_bundle(registry.records([run_id]))
    assert schema_errors(bundle) is None  # bundle.schema.json knows serving tests
    other = Registry(f"sqlite:///{tmp_path / 'b.sqlite'}")
    other.add_records(read_bundle(bundle, "test"))
    assert read_run(other, run_id)["tests"][0]["requests"] == test["requests"]
