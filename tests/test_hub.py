"""The results hub (docs/hub.md): contributors submit bundles to a git repository, its CI
verifies them and publishes the site from the folder.

The runs of the two "contributors" are made by tests/runfactory.py (two catalog machines,
so they carry ceilings) on the identity of a real synthetic GGUF; the imported table is
tests/data/llama_bench_tiny_pp512.json, recorded from the real llama-bench (see tests/data/README.md).
Every command is the real CLI, run as the results repository's CI would run it.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import assert_one_line_error, run_pdx_here
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runfactory
from pdx.registry.hub_folder import SUFFIX, file_name, iter_bundles
from pdx.api.contrib.publish import publish_bundles
from pdx.api.contrib.verify import verify_folder
from pdx.domain.models import identify
from pdx.registry import Registry, bundle

LLAMA_BENCH = Path(__file__).with_name("data") / "llama_bench_tiny_pp512.json"


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), "-c", "user.name=pdx test", "-c", "user.email=test@pdx.invalid",
                             *args], capture_output=True, text=True, check=True)
    return result.stdout


def contributor(tmp_path: Path, monkeypatch, name: str, machine: str, model, seed: int) -> str:
    """A contributor's own registry holding one run of ``model`` on ``machine``; its URL."""
    url = f"sqlite:///{tmp_path / name}.sqlite"
    registry = Registry(url)
    monkeypatch.setattr(runfactory, "ENVIRONMENT", runfactory.ENVIRONMENT | {"hostname": f"{name}-workstation"})
    runfactory.add_run(registry, runfactory.hardware(machine, 0), model, "llamacpp-bench",
                       runfactory.START, random.Random(seed))
    registry.close()
    return url


def submit(url: str, repo: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_pdx_here("submit", "--registry", url, "-o", str(repo), *extra)


def written(result: subprocess.CompletedProcess) -> list[str]:
    return [line.split()[1] for line in result.stdout.splitlines() if line.startswith("wrote ")]


@pytest.fixture
def model(tiny_gguf):
    return identify(str(tiny_gguf))


@pytest.fixture
def repo(tmp_path, monkeypatch, model, tiny_gguf) -> Path:
    """A results repository with two contributors' pull requests merged: alice (an M2 Max),
    bob (an RTX 4090, plus his llama-bench table of the same model)."""
    repo = tmp_path / "results"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    alice = contributor(tmp_path, monkeypatch, "alice", "Apple M2 Max", model, 1)
    result = submit(alice, repo)
    assert result.returncode == 0, result.stderr
    assert f"git -C {repo} add" in result.stdout  # what to commit, spelled out
    git(repo, "add", *written(result))
    git(repo, "commit", "-q", "-m", "alice: M2 Max")
    bob = contributor(tmp_path, monkeypatch, "bob", "NVIDIA RTX 4090", model, 2)
    imported = run_pdx_here("import", str(LLAMA_BENCH), "-m", str(tiny_gguf), "--registry", bob)
    assert imported.returncode == 0, imported.stderr
    refused = submit(bob, repo)  # the recorded table is noisy (a busy machine): refused at 5%...
    assert refused.returncode == 1 and "is noisy: CV" in refused.stderr and len(written(refused)) == 1
    result = submit(bob, repo, "--max-cv", "20%")  # ...and submitted at a CV bob states
    assert result.returncode == 0, result.stderr
    assert len(written(result)) == 1 and "already there" in result.stdout
    git(repo, "add", *written(refused), *written(result))
    git(repo, "commit", "-q", "-m", "bob: RTX 4090 and llama-bench")
    return repo


def test_two_contributors_verify_and_publish_with_both_machines_and_ceilings(repo, tmp_path, model):
    files = git(repo, "ls-files").split()
    assert len(files) == 3 and all(f.endswith(SUFFIX) for f in files)
    for name in files:  # redacted: neither contributor's host nor a path leaves their machine
        text = (repo / name).read_text()
        assert "workstation" not in text and str(tmp_path) not in text
        assert json.loads(text)["redacted"] is True
    verified = run_pdx_here("hub", "verify", str(repo))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "3 file(s), 3 run(s): no problem(s)" in verified.stdout

    site = tmp_path / "site"
    published = run_pdx_here("publish", str(site), "--bundles", str(repo), "--title", "hub")
    assert published.returncode == 0, published.stderr
    pages = list((site / "models").glob("*.json"))
    assert len(pages) == 1  # one model: the same sha256 from three runs
    data = json.loads(pages[0].read_text())
    assert data["model"]["sha256"] == model.sha256
    rows = {row["hardware"]["name"]: row for row in data["leaderboard"]}
    # bob's llama-bench table was submitted at a CV he stated (20%): the leaderboard takes no noisy run
    # (over 5%), so its machine has no row, and the page says one run was left out and why.
    assert set(rows) == {"Apple M2 Max", "NVIDIA RTX 4090"}
    assert data["left_out"] == "1 run left out: noisy"
    for machine in ("Apple M2 Max", "NVIDIA RTX 4090"):
        decode = rows[machine]["decode"]
        assert decode["ceiling"] > decode["rate"] > 0 and 0 < decode["fraction"] < 1
    html = pages[0].with_suffix(".html").read_text()
    assert "Apple M2 Max" in html and "NVIDIA RTX 4090" in html and "of ceiling" in html
    assert "1 run left out: noisy" in html


def _first_bundle(repo: Path) -> Path:
    return sorted(repo.glob(f"*{SUFFIX}"))[0]


def _verify_fails(repo: Path, *needles: str) -> list[str]:
    result = run_pdx_here("hub", "verify", str(repo))
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(needle in "\n".join(lines) for needle in needles), lines
    return lines


def test_a_tampered_bundle_fails_verify_naming_its_file(repo):
    path = _first_bundle(repo)
    document = json.loads(path.read_text())
    test = document["runs"][0]["record"]["tests"][1]
    for sample in test["samples"]:
        sample["ns"] //= 2  # twice as fast
    path.write_text(json.dumps(document))
    lines = _verify_fails(repo, path.name, "does not match its sha256")
    assert len(lines) == 1 and lines[0].startswith(f"{path.name}: ")
    # Recomputing the digest as well still shows: the file's name is the old content's id.
    document["runs"][0]["sha256"] = bundle.digest(document["runs"][0]["record"])
    path.write_text(json.dumps(document))
    _verify_fails(repo, f"{path.name}: named {path.name} but its run's content id makes it")


def test_a_duplicated_bundle_fails_verify_naming_both_files(repo):
    path = _first_bundle(repo)
    (repo / "copies").mkdir()
    shutil.copy(path, repo / "copies" / path.name)
    lines = _verify_fails(repo, f"copies/{path.name}: duplicate of {path.name}")
    assert len(lines) == 1


def _forge(repo: Path, path: Path, change) -> Path:
    """A bundle altered with care (digest recomputed, renamed to its new content id): what
    only the plausibility checks can catch."""
    document = json.loads(path.read_text())
    record = document["runs"][0]["record"]
    change(record)
    document["runs"][0]["sha256"] = bundle.digest(record)
    path.unlink()
    forged = repo / file_name(record)
    forged.write_text(json.dumps(document))
    return forged


def _with_ceilings(repo: Path) -> Path:
    return next(p for p in sorted(repo.glob(f"*{SUFFIX}"))
                if json.loads(p.read_text())["runs"][0]["record"]["tests"][1]["ceilings"])


def test_a_rate_above_its_ceiling_is_implausible(repo):
    def faster(record):
        test = record["tests"][1]
        for sample in test["samples"]:
            sample["ns"] //= 3
        test["ceilings"]["measured"] *= 3

    forged = _forge(repo, _with_ceilings(repo), faster)
    lines = _verify_fails(repo, forged.name, "tg128", "of its ceiling")
    assert len(lines) == 1
    assert run_pdx_here("hub", "verify", str(repo), "--tolerance", "300%").returncode == 0


def test_a_stored_rate_its_samples_do_not_give_is_caught(repo):
    def inflate(record):
        record["tests"][0]["ceilings"]["measured"] *= 1.2

    forged = _forge(repo, _with_ceilings(repo), inflate)
    _verify_fails(repo, f"{forged.name}: run", "pp512: the ceiling's measured rate")


def test_one_sha256_has_one_name(repo):
    forged = _forge(repo, _first_bundle(repo), lambda r: r["model"].update(name="renamed"))
    _verify_fails(repo, "'renamed'", "model sha256", "has name")
    assert forged.exists()


def test_a_bundle_of_two_runs_and_a_file_that_is_no_bundle(repo):
    first = json.loads(_first_bundle(repo).read_text())
    two = bundle.make_bundle([first["runs"][0]["record"]] * 2)
    (repo / f"both{SUFFIX}").write_text(json.dumps(two))
    (repo / f"notes{SUFFIX}").write_text('{"hello": 1}')
    lines = _verify_fails(repo, f"both{SUFFIX}: holds 2 runs", f"notes{SUFFIX}: not a pdx bundle")
    assert all(line.split(":")[0].endswith(SUFFIX) for line in lines)


def test_publish_again_after_one_new_bundle_rewrites_only_the_pages_it_changes(repo, tmp_path, monkeypatch,
                                                                                model):
    site = tmp_path / "site"
    before = _ids(repo)
    first = publish_bundles(repo, site)
    carol = contributor(tmp_path, monkeypatch, "carol", "AMD EPYC 9654", model, 3)
    assert submit(carol, repo).returncode == 0
    second = publish_bundles(repo, site)
    assert first.files_read == len(before) and second.files_read == 1  # only the new bundle read
    changed = set(second.changed)
    new = (_ids(repo) - before).pop()
    assert f"runs/{new}.html" in changed and "index.html" in changed
    assert any(p.startswith("hardware/amd-epyc-9654") for p in changed)
    assert not any(f"runs/{old}" in p for old in before for p in changed)  # every other run page kept
    assert not any(p.startswith(("hardware/apple", "hardware/nvidia")) for p in changed)
    # Permalinks: every page of the first build, and its JSON, is still there at its address (charts
    # are assets by the hash of their data: a changed chart is a new file).
    pages = [p for p in first.changed if p.endswith((".html", ".json"))]
    assert len(pages) > 20 and all((site / p).is_file() for p in pages)
    assert all(p.startswith("assets/charts/") for p in second.removed)
    # The runs' pages by id prefix: only the new run's changed.
    assert [p for p in changed if p.startswith("runs/ids/")] == [f"runs/ids/{new[:2]}.json"]
    assert publish_bundles(repo, site).changed == []  # nothing new: nothing written


def _ids(repo: Path) -> set[str]:
    return {r["id"] for _, records in iter_bundles(repo) for r in records}


def test_submit_refuses_misleading_runs_unless_forced(tmp_path, monkeypatch, model):
    url = contributor(tmp_path, monkeypatch, "dave", "Apple M4 Pro", model, 4)
    registry = Registry(url)
    noisy = registry.run_ids()[0]
    stopped = runfactory.add_run(registry, runfactory.hardware("Apple M4 Pro", 0), model, "llamacpp-python",
                                 runfactory.START, random.Random(5))
    registry.finish_run(stopped, "interrupted")
    run_pdx_here("import", str(LLAMA_BENCH), "--registry", url)  # no -m: a model only described
    unnamed = next(i for i in registry.run_ids() if i not in (noisy, stopped))
    repo = tmp_path / "results"

    result = submit(url, repo, "--max-cv", "0.1%")
    assert result.returncode == 1
    refused = {line.split()[2].rstrip(":"): line for line in result.stderr.splitlines() if line.startswith("refused")}
    assert set(refused) == {noisy[:12], stopped[:12], unnamed[:12]}
    assert "is noisy: CV" in refused[noisy[:12]] and "over 0.1%" in refused[noisy[:12]]
    assert "interrupted, not complete" in refused[stopped[:12]]
    assert "no model identity" in refused[unnamed[:12]] and "-m MODEL" in refused[unnamed[:12]]
    assert not repo.exists() or not list(repo.iterdir())

    assert submit(url, repo, noisy).returncode == 0  # at the default 5% it is not noisy
    forced = submit(url, repo, "--force")
    assert forced.returncode == 0 and len(written(forced)) == 2 and "already there" in forced.stdout
    assert "(forced: " in forced.stdout
    # Verify still names the unidentified model: forcing a submission is not passing review.
    _verify_fails(repo, "no model identity")


def test_submit_twice_writes_nothing_new(tmp_path, monkeypatch, model):
    url = contributor(tmp_path, monkeypatch, "erin", "Apple M2 Max", model, 6)
    repo = tmp_path / "results"
    first = submit(url, repo)
    name = written(first)[0]
    before = (repo / name).read_bytes()
    again = submit(url, repo)
    assert again.returncode == 0 and "already there" in again.stdout and "commit them" not in again.stdout
    assert (repo / name).read_bytes() == before


def test_bad_options_and_folders_are_one_line_errors(tmp_path):
    assert_one_line_error(run_pdx_here("hub", "verify", str(tmp_path / "missing")), "missing")
    assert_one_line_error(run_pdx_here("hub", "verify", str(tmp_path), "--tolerance", "lots"), "--tolerance")
    assert_one_line_error(run_pdx_here("publish", str(tmp_path / "site"), "--bundles", str(tmp_path)),
                          "no bundles")
    empty = run_pdx_here("hub", "verify", str(tmp_path))
    assert empty.returncode == 0 and "0 file(s)" in empty.stdout + empty.stderr


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_verify_reports_any_damage_as_problems_never_a_crash(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("damaged")
    record = runfactory_record()
    text = json.dumps(bundle.make_bundle([record]), indent=1)
    start = data.draw(st.integers(0, len(text) - 1))
    cut = data.draw(st.integers(0, 40))
    insert = data.draw(st.text(alphabet='0123456789{}[]",: abcxyz-.eE', max_size=8))
    damaged = text[:start] + insert + text[start + cut:]
    path = folder / file_name(record)
    path.write_text(damaged)
    result = verify_folder(folder)  # never raises
    assert all(p.file == path.name for p in result.problems)
    try:
        runs = json.loads(damaged).get("runs")
    except (ValueError, AttributeError):
        runs = None  # not JSON, or not an object
    if runs == json.loads(text)["runs"]:
        assert all("pdx_version" in p.message or "exported_at" in p.message or "format" in p.message
                   or "schema_version" in p.message or "redacted" in p.message or "top level" in p.message
                   for p in result.problems)
    else:
        assert result.problems


_RECORD: list[dict] = []


def runfactory_record() -> dict:
    """One run record made by the factory (cached: the property test draws many damages of it)."""
    if not _RECORD:
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            registry = Registry(f"sqlite:///{folder}/r.sqlite")
            run = runfactory.add_run(registry, runfactory.hardware("Apple M2 Max", 0),
                                     runfactory.model("hub", 1), "llamacpp-bench", runfactory.START,
                                     random.Random(0), tests=runfactory.TESTS[:2], repetitions=3)
            _RECORD.append(registry.records([run])[0])
            registry.close()
    return json.loads(json.dumps(_RECORD[0]))


# -- "what to buy" and "decode vs ceiling by chip" ----------------------------------------

BUY_JS = Path(__file__).parents[1] / "reports" / "templates" / "buy.js"


def hand_estimate(record: dict, prompt: int, output: int, depth: int, concurrency: int) -> dict:
    """The estimate worked out from a stored run's samples, as docs/hub.md and the page state it."""
    tests = {t["name"]: t for t in record["tests"]}
    pp = tests["pp512"]
    pp_rate = sum(512e9 / s["ns"] for s in pp["samples"]) / len(pp["samples"])
    # Two measured depths: the least-squares line runs through each depth's mean time per token.
    points = [(t["depth"] + t["n_gen"] / 2, sum(s["ns"] for s in t["samples"]) / len(t["samples"]) / 1e9 / t["n_gen"])
              for t in (tests["tg128"], tests["tg128@d4096"])]
    (x0, y0), (x1, y1) = points
    slope = (y1 - y0) / (x1 - x0)
    per_token = y0 + slope * (depth + prompt + output / 2 - x0)

    def per_sequence(test):
        n = len(test["samples"])
        return sum(128e9 * test["batch"] / s["ns"] for s in test["samples"]) / n / test["batch"]

    slowdown = 1.0 if concurrency == 1 else per_sequence(tests["tg128"]) / per_sequence(tests[f"tg128/b{concurrency}"])
    step = per_token * slowdown
    ttft = concurrency * prompt / pp_rate
    return {"ttft": ttft, "perRequest": 1 / step, "aggregate": concurrency / step,
            "total": ttft + output * step, "dominant": "prefill" if ttft > output * step else "decode",
            "slope": slope}


def _published(repo: Path, site: Path) -> dict:
    publish_bundles(repo, site)
    return json.loads((site / "buy.json").read_text())


def _m2_max(repo: Path) -> dict:
    for path in repo.glob(f"*{SUFFIX}"):
        record = json.loads(path.read_text())["runs"][0]["record"]
        if record["hardware"]["name"] == "Apple M2 Max":
            return record
    raise AssertionError("no M2 Max run")


WORKLOADS = [(512, 128, 0, 1), (2000, 300, 1500, 1), (64, 1000, 8000, 4), (4096, 16, 0, 8)]


@pytest.mark.skipif(not shutil.which("node"), reason="node runs the page's script outside a browser")
def test_the_pages_estimate_matches_a_hand_calculation(repo, tmp_path):
    data = _published(repo, tmp_path / "site")
    record = _m2_max(repo)
    (model,) = data["models"]
    assert len(model["machines"]) == 2  # bob's llama-bench table is noisy: no estimate from it, and said
    assert data["left_out"] == "1 run left out: noisy"
    machine = next(m for m in model["machines"] if m["run"] == record["id"])
    script = ("const {estimate} = require(process.argv[1]); const [m, ws] = JSON.parse(process.argv[2]);"
              "console.log(JSON.stringify(ws.map(w => estimate(m, w))));")
    workloads = [dict(zip(("prompt", "output", "depth", "concurrency"), w)) for w in WORKLOADS]
    out = subprocess.run(["node", "-e", script, str(BUY_JS), json.dumps([machine, workloads])],
                         capture_output=True, text=True, check=True).stdout
    for workload, got in zip(WORKLOADS, json.loads(out)):
        want = hand_estimate(record, *workload)
        for key in ("ttft", "perRequest", "aggregate", "total"):
            assert got[key] == pytest.approx(want[key], rel=1e-9), (workload, key)
        assert got["dominant"] == want["dominant"]
    assert machine["depth_fit"]["slope"] == pytest.approx(hand_estimate(record, 1, 1, 0, 1)["slope"], rel=1e-9)
    assert machine["depth_fit"]["slope_se"] is not None  # ten samples at two depths: the fit has an error
    notes = json.loads(subprocess.run(
        ["node", "-e", script, str(BUY_JS), json.dumps([machine, [{"prompt": 512, "output": 128, "depth": 100000,
                                                                   "concurrency": 32}]])],
        capture_output=True, text=True, check=True).stdout)[0]["notes"]
    assert notes == ["context beyond the measured depths", "concurrency beyond the measured batches"]


def test_decode_vs_ceiling_by_chip_and_the_chip_pages(repo, tmp_path):
    site = tmp_path / "site"
    _published(repo, site)
    rows = json.loads((site / "chips.json").read_text())["rows"]
    record = _m2_max(repo)
    tg = next(t for t in record["tests"] if t["name"] == "tg128")
    row = next(r for r in rows if r["run"] == record["id"])
    measured = sum(128e9 / s["ns"] for s in tg["samples"]) / len(tg["samples"])
    assert row["chip"] == "Apple M2 Max" and row["bandwidth"] == 400e9
    assert row["measured"] == pytest.approx(measured) and row["ceiling"] == tg["ceilings"]["ceiling"]
    assert row["fraction"] == pytest.approx(measured / tg["ceilings"]["ceiling"])
    # bob's llama-bench table (no stored ceiling) is noisy: no chip's figure, and the page says so.
    assert len(rows) == 2 and None not in [r["ceiling"] for r in rows]
    assert json.loads((site / "chips.json").read_text())["left_out"] == "1 run left out: noisy"
    html = (site / "chips.html").read_text()
    assert "1 run left out: noisy" in html
    assert "Apple M2 Max" in html and "400" in html and row["chip_page"] in html
    chip = json.loads((site / row["chip_page"]).with_suffix(".json").read_text())
    assert chip["ceiling_basis"]["bandwidth"] == 400e9 and [r["id"] for r in chip["runs"]] == [record["id"]]
    page = (site / row["chip_page"]).read_text()
    assert "400 GB/s" in page and record["id"][:12] in page


def test_the_data_layout_doc_names_every_hub_field(repo, tmp_path):
    site = tmp_path / "site"
    _published(repo, site)
    doc = (site / "DATA.md").read_text()

    def keys(node):
        if isinstance(node, dict):
            for key, value in node.items():
                yield key
                yield from keys(value)
        elif isinstance(node, list) and node:
            yield from keys(node[0])

    for path in (site / "chips.json", next(site.glob("chips/*.json")), site / "buy.json"):
        data = json.loads(path.read_text())
        missing = {k for k in keys(data) if f"`{k}`" not in doc} - {"schema"}
        # A chip page's ceiling_basis and hardware are a run's, documented with the run.
        missing -= set(keys(data.get("ceiling_basis") or {})) | set(keys(data.get("hardware") or {}))
        assert not missing, f"{path.name}: {sorted(missing)} not in DATA.md"


@given(intercept=st.floats(1e-4, 1.0), slope=st.floats(0, 1e-4),
       xs=st.lists(st.integers(0, 100_000), min_size=2, max_size=30, unique=True))
def test_the_depth_fit_recovers_a_line(intercept, slope, xs):
    from pdx.domain.stats import linear_fit

    fit = linear_fit(xs, [intercept + slope * x for x in xs])
    assert fit["slope"] == pytest.approx(slope, rel=1e-6, abs=1e-12)
    assert fit["intercept"] == pytest.approx(intercept, rel=1e-6, abs=1e-9)
    assert (fit["slope_se"] is None) == (len(xs) == 2)
    assert fit["x_min"] == min(xs) and fit["x_max"] == max(xs)
    assert linear_fit(xs[:1], [intercept]) is None and linear_fit([5, 5], [1.0, 2.0]) is None


def test_a_bundle_with_a_host_name_and_a_home_path_is_refused_and_a_redacted_one_publishes_neither(
        tmp_path, monkeypatch, model):
    """The issue's acceptance: `pdx export` without --redact keeps the build host's name and a model path
    under a home folder; verify refuses that file naming both fields, and `pdx submit` (redacting by
    default, saying what it removed) writes one whose site holds neither, on any page or JSON."""
    import dataclasses

    at_home = dataclasses.replace(model, path="/home/frank/models/secret-draft.gguf")
    url = contributor(tmp_path, monkeypatch, "frank", "Apple M2 Max", at_home, 7)
    repo = tmp_path / "results"
    repo.mkdir()
    exported = tmp_path / "plain.pdx.json"
    assert run_pdx_here("export", "--registry", url, "-o", str(exported)).returncode == 0
    (record,) = [entry["record"] for entry in json.loads(exported.read_text())["runs"]]
    shutil.copy(exported, repo / file_name(record))
    lines = _verify_fails(repo, "holds private data", "environment.hostname (host)", "model.path (path)")
    assert not any("frank-workstation" in line or "/home/frank" in line for line in lines)  # named, not shown
    refused = run_pdx_here("publish", str(tmp_path / "refused"), "--bundles", str(repo))
    assert_one_line_error(refused, "holds private data")

    (repo / file_name(record)).unlink()
    submitted = submit(url, repo)
    assert submitted.returncode == 0, submitted.stderr
    assert "  redacted " in submitted.stdout and "environment.hostname (host)" in submitted.stdout
    assert "model.path (path)" in submitted.stdout
    verified = run_pdx_here("hub", "verify", str(repo))
    assert verified.returncode == 0, verified.stdout
    site = tmp_path / "site"
    assert run_pdx_here("publish", str(site), "--bundles", str(repo)).returncode == 0
    texts = [p.read_text(errors="replace") for p in site.rglob("*") if p.is_file() and p.suffix in (".html", ".json")]
    assert texts and not any("frank-workstation" in t or "/home/frank" in t for t in texts)
