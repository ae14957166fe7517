"""Secrets in other people's files never survive (issue 27): redaction by what a field is, not where it sits.

Two real hostile inputs: the JSON of `vllm bench serve` (tests/data/vllm_bench_serve_summary.json)
with an ``api_key`` and passwords in its model id and base URL, and a bundle that claims to be a
pdx run with tokens among its environment variables, an API key and a URL with a password in its
options, a bearer header and a client secret deep in its engine details. Both go through every
path that stores or shares a run: import, export (plain and --redact), submit, publish from the
registry and from a results folder; every file each writes, and the registry file itself, is
searched for the secrets. Hypothesis then plants secrets at random depths of random records.
"""

from __future__ import annotations

import json
import random
import string
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdx.domain.models import identify
from pdx.registry import Registry
from pdx.registry.bundle import content_id, digest
from pdx.registry.hub_folder import file_name
from pdx.registry.importers import vllm_bench
from pdx.registry.redact import redact_record
from pdx.base.secrets import MARK, is_secret_field, redact_secrets, secret_fields
from pdx.domain.workload import TestSpec

from conftest import pdx_here, run_pdx_here, show
from runfactory import add_run, hardware, model

DATA = Path(__file__).with_name("data")
VLLM_SECRETS = ["sk-VLLMapikey0001", "PWmodelIDsecret02", "PWbaseURLsecret03"]
BUNDLE_SECRETS = ["hf_HFTOKENsecret04", "sk-OPENAIsecret05", "sk-OPTIONapikey06", "PWoptionURL07",
                  "BEARERsecret08", "CLIENTsecret09", "PWinAkey10", "CMDapikey11"]
SECRETS = VLLM_SECRETS + BUNDLE_SECRETS


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} found in {where}"


def files_text(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("latin-1") for p in sorted(root.rglob("*")) if p.is_file())


def hostile_vllm(tmp_path: Path) -> Path:
    document = json.loads((DATA / "vllm_bench_serve_summary.json").read_text())
    document |= {"api_key": VLLM_SECRETS[0], "model_id": f"https://alice:{VLLM_SECRETS[1]}@hub.example.org/org/m",
                 "base_url": f"http://bob:{VLLM_SECRETS[2]}@10.1.2.3:8000"}
    path = tmp_path / "vllm_with_secrets.json"
    path.write_text(json.dumps(document))
    return path


def hostile_record(tmp_path: Path, gguf: Path) -> dict:
    """A run that claims to be measured by pdx, carrying secrets where a careless or hostile tool puts them."""
    scratch = Registry(f"sqlite:///{tmp_path / 'maker.sqlite'}")
    run_id = add_run(scratch, hardware("AMD EPYC 9654", 0), model("m", 0), "openai",
                     datetime(2026, 1, 2, tzinfo=timezone.utc), random.Random(3), tests=[TestSpec(64, 0)],
                     repetitions=3, options={"api_key": BUNDLE_SECRETS[2],
                                             "url": f"https://user:{BUNDLE_SECRETS[3]}@llm.example.org:8000/v1"},
                     command=f"pdx bench --api-key {BUNDLE_SECRETS[7]}")
    (record,) = scratch.records([run_id])
    scratch.close()
    info = identify(str(gguf)).to_dict()
    record["model"] = info | {"id": info["sha256"]}
    record["environment"]["variables"] = {"HF_TOKEN": BUNDLE_SECRETS[0], "OPENAI_API_KEY": BUNDLE_SECRETS[1],
                                          "OMP_NUM_THREADS": "4"}
    record["engine"]["details"] = {"headers": {"Authorization": f"Bearer {BUNDLE_SECRETS[4]}"},
                                   "clients": [{"oauth": {"client_secret": BUNDLE_SECRETS[5], "scopes": ["r"]}}],
                                   f"https://u:{BUNDLE_SECRETS[6]}@h.example.org/": 1}
    return record


def write_bundle(records: list[dict], path: Path) -> Path:
    path.write_text(json.dumps({"format": "pdx-bundle", "schema_version": 1, "pdx_version": "0.1.0",
                                "exported_at": "2026-01-02T00:00:00+00:00", "redacted": False,
                                "runs": [{"sha256": digest(r), "record": r} for r in records]}))
    return path


def test_the_vllm_api_key_survives_no_redaction():
    """The issue's case: export --redact kept the text of an ``api_key`` field."""
    document = json.loads((DATA / "vllm_bench_serve_summary.json").read_text()) | {"api_key": VLLM_SECRETS[0]}
    (record,) = vllm_bench.read(Path("x.json"), document, json.dumps(document))
    assert VLLM_SECRETS[0] in json.dumps(record)  # the importer keeps the tool's fields (engine details)
    assert VLLM_SECRETS[0] not in json.dumps(redact_record(record))
    assert VLLM_SECRETS[0] not in json.dumps(redact_secrets(record))


def test_no_secret_survives_import_export_submit_or_publish(registry_url, tmp_path, tiny_gguf):
    added = json.loads(pdx_here("import", str(hostile_vllm(tmp_path)), "--registry", registry_url, "--json"))["added"]
    bundle = write_bundle([hostile_record(tmp_path, tiny_gguf)], tmp_path / "hostile.pdx.json")
    added += json.loads(pdx_here("import", str(bundle), "--registry", registry_url, "--json"))["added"]
    assert len(added) == 2
    for run_id in added:
        stored = show(registry_url, run_id)
        assert_no_secret(json.dumps(stored), f"pdx show {run_id}")
    stored = show(registry_url, added[1])
    assert stored["environment"]["variables"] == {"HF_TOKEN": MARK, "OPENAI_API_KEY": MARK, "OMP_NUM_THREADS": "4"}
    assert stored["options"] == {"api_key": MARK, "url": "https://llm.example.org:8000/v1"}
    assert stored["engine"]["details"]["clients"] == [{"oauth": {"client_secret": MARK, "scopes": ["r"]}}]
    if registry_url.startswith("sqlite:///"):
        assert_no_secret(Path(registry_url.removeprefix("sqlite:///")).read_bytes().decode("latin-1"), "the registry")

    out = tmp_path / "out"
    out.mkdir()
    pdx_here("export", "-o", str(out / "plain.pdx.json"), "--registry", registry_url)
    pdx_here("export", "-o", str(out / "redacted.pdx.json"), "--redact", "--registry", registry_url)
    submitted = run_pdx_here("submit", "--force", "-o", str(out / "results"), "--registry", registry_url)
    assert submitted.returncode == 0, submitted.stderr
    assert len(list((out / "results").glob("*.pdx.json"))) == 2
    pdx_here("publish", str(out / "site"), "--registry", registry_url)
    assert list((out / "site").rglob("*.json"))
    assert_no_secret(files_text(out), "export, submit and publish")


def test_a_results_folder_with_a_strangers_secrets_publishes_none(tmp_path, tiny_gguf):
    """A bundle that never went through pdx submit (a pull request's file): verify names its secret
    fields (never their values); a site built from the folder holds none of them."""
    record = hostile_record(tmp_path, tiny_gguf)
    folder = tmp_path / "results"
    folder.mkdir()
    write_bundle([record], folder / file_name(record))
    verified = run_pdx_here("hub", "verify", str(folder))
    assert verified.returncode == 1
    assert_no_secret(verified.stdout + verified.stderr, "hub verify")
    (line,) = [line for line in verified.stdout.splitlines() if "holds secrets" in line]
    for field in ("environment.variables.HF_TOKEN", "options.api_key", "options.url",
                  "engine.details.headers.Authorization", "engine.details.clients[0].oauth.client_secret"):
        assert field in line, line
    site = tmp_path / "site"
    refused = run_pdx_here("publish", str(site), "--bundles", str(folder), "--no-cache")
    assert refused.returncode == 2 and "holds secrets" in refused.stderr and not site.exists()
    assert_no_secret(refused.stdout + refused.stderr, "publish refusing the folder")
    clean = dict(redact_record(record), id="0" * 32, tags=["clean"])  # a run as `pdx submit` writes it
    write_bundle([clean], folder / file_name(clean))
    published = run_pdx_here("publish", str(site), "--bundles", str(folder), "--no-cache", "--skip-rejected")
    assert published.returncode == 0, published.stderr
    assert "pdx: left out: " in published.stderr and "published 1 runs" in published.stdout
    assert list(site.rglob("*.json"))
    assert_no_secret(files_text(site) + published.stderr, "the site of a results folder")


def test_a_run_without_secrets_keeps_its_id_and_one_with_them_is_named_by_what_is_stored(registry_url, tmp_path):
    clean = DATA / "vllm_bench_serve_summary.json"
    text = clean.read_text()
    (raw,) = vllm_bench.read(clean, json.loads(text), text)
    assert redact_secrets(raw) == raw
    assert json.loads(pdx_here("import", str(clean), "--registry", registry_url, "--json"))["added"] == [raw["id"]]
    hostile = hostile_vllm(tmp_path)
    text = hostile.read_text()
    (raw,) = vllm_bench.read(hostile, json.loads(text), text)
    (added,) = json.loads(pdx_here("import", str(hostile), "--registry", registry_url, "--json"))["added"]
    assert added != raw["id"] and added == content_id(redact_secrets(raw))
    again = json.loads(pdx_here("import", str(hostile), "--registry", registry_url, "--json"))
    assert again["added"] == [] and again["skipped"] == [added]


# -- what a field is, wherever it sits ---------------------------------------------------------------

def test_secret_fields_by_name():
    for name in ("api_key", "apiKey", "API-KEY", "x-api-key", "apikey", "token", "HF_TOKEN", "accessToken",
                 "password", "DB_PASSWORD", "passwd", "secret", "client_secret", "AWS_SECRET_ACCESS_KEY",
                 "Authorization", "credentials", "private_key", "GITHUB_TOKEN"):
        assert is_secret_field(name), name
    for name in ("key", "tokens", "max_tokens", "n_tokens", "bos_token_id", "tokenizer", "total_input_tokens",
                 "inter_token_latency", "token_count", "keys", "secretary", "passes", "n_batch", "type_k"):
        assert not is_secret_field(name), name


def test_figures_under_token_names_stay():
    """AIPerf's time_to_first_token is a latency: its figures and unit stay; text under a key's name goes."""
    record = {"time_to_first_token": {"mean": 5.3, "unit": "ms"}, "n": 2,
              "api_key": {"value": "sk-abc123", "n": 1}, "Authorization": ["Bearer", "abc123"], "token": "VALUE"}
    assert redact_secrets(record) == {"time_to_first_token": {"mean": 5.3, "unit": "ms"}, "n": 2,
                                      "api_key": {"value": MARK, "n": 1}, "Authorization": [MARK, MARK],
                                      "token": "VALUE"}
    assert secret_fields(record) == ["api_key.value", "Authorization[0]", "Authorization[1]"]


_SECRET = st.text(string.ascii_letters + string.digits + "-._~!$*+,;=%", min_size=6, max_size=20).map(
    lambda s: f"Zq9{s}")
_SAFE_KEYS = st.sampled_from(["name", "n_batch", "tests", "engine", "details", "settings", "variables",
                              "options", "model", "samples", "ns", "max_tokens", "unit"])
_SAFE_TEXT = st.text(string.ascii_letters + string.digits + " ._", max_size=12)
_CLEAN = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _SAFE_TEXT,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SAFE_KEYS, inner, max_size=3),
                      max_leaves=12)
_SECRET_KEYS = st.sampled_from(["api_key", "apiKey", "HF_TOKEN", "OPENAI_API_KEY", "password", "passwd", "secret",
                                "Authorization", "credentials", "token", "client_secret", "DB_PASSWORD",
                                "AWS_SECRET_ACCESS_KEY", "x-api-key", "private_key", "access_token"])


@st.composite
def planted(draw):
    """(record, secret): a random record with a secret at a random depth, as a secret-named field's
    text (alone, in a list, in an object), or as a URL's user or password in a value or a field name."""
    secret = draw(_SECRET)
    form = draw(st.sampled_from(["field", "list", "object", "url", "url-user", "url-key", "flag"]))
    if form == "flag":  # a command line's value ends at punctuation (";", ","): the secret is one word there
        secret = "".join(c for c in secret if c.isalnum())
    scheme = draw(st.sampled_from(["http", "https", "postgresql+psycopg", "redis"]))
    url = f"{scheme}://ann:{secret}@db.example.org:5432/x" if form != "url-user" else f"{scheme}://{secret}@h.org/"
    value = {"field": {draw(_SECRET_KEYS): secret},
             "list": {draw(_SECRET_KEYS): [draw(_SAFE_TEXT), secret]},
             "object": {draw(_SECRET_KEYS.filter(lambda k: not k.lower().endswith("token"))): {"value": secret}},
             "url": {draw(_SAFE_KEYS): f"see {url} now"},
             "url-user": {draw(_SAFE_KEYS): url},
             "url-key": {url: draw(_CLEAN)},
             "flag": {"command": f"serve --api-key {secret} -c 4"}}[form]
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            value = draw(st.dictionaries(_SAFE_KEYS, _CLEAN, max_size=2)) | {draw(_SAFE_KEYS): value}
        else:
            siblings = draw(st.lists(_CLEAN, max_size=2))
            value = [*siblings[:1], value, *siblings[1:]]
    return value, secret


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(planted())
def test_a_planted_secret_never_survives_at_any_depth(case):
    record, secret = case
    before = json.dumps(record)
    assert secret in before
    clean = redact_secrets(record)
    assert secret not in json.dumps(clean) and json.dumps(record) == before  # a copy: the record is not altered
    assert secret not in json.dumps(redact_record({"environment": {}, "run": record}))
    assert redact_secrets(clean) == clean and secret_fields(record) and not secret_fields(clean)
    assert all(secret not in path for path in secret_fields(record))


@settings(max_examples=200, deadline=None)
@given(_CLEAN)
def test_a_record_without_secrets_comes_back_as_it_was(record):
    assert redact_secrets(record) is record and secret_fields(record) == []  # not even copied


_PIECES = ["/home/ann/m.gguf", "~/x", "C:\\Users\\ann\\m.gguf", "\\\\srv\\share\\f", "ann@example.org", "10.0.0.1",
           "[fe80::1%eth0]", "http://build7.lan:8080/v1", "https://user:pw@host.example/x", "buildhost",
           "BUILDHOST.corp", "--api-key sk-1", "HF_TOKEN=abc", "pp512/b8", "tg128@d4096", ">/tmp/log", " ", "=", "'"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=8), st.sampled_from(["buildhost", "vm", ""]),
       st.sampled_from(["", " "]))
def test_redacting_twice_changes_nothing_and_leaves_nothing_private(pieces, hostname, joiner):
    """What `pdx submit` writes, `pdx hub verify` passes: a redacted record holds no private field
    (private_fields is empty), whatever paths, hosts, addresses and secrets its text held."""
    from pdx.registry.redact import private_fields

    text = joiner.join(pieces)
    record = {"environment": {"hostname": hostname, "command": text}, "model": {"path": text}, "tests": []}
    once = redact_record(record)
    assert redact_record(once) == once and private_fields(once) == []
    if joiner and "/home/ann/m.gguf" in pieces:
        assert "model.path" in dict(private_fields(record))
