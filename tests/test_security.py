"""Security: secrets never recorded, hostile names rendered inert, publish kept inside its folder.

Runs with secrets go through the real CLI against tests/fake_openai_server.py (a
server that cannot leak what it never receives); the registry file itself, bundles
(redacted or not), the report and every site file are searched for the secrets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import run_pdx
from pdx.secrets import MARK, is_secret_name, scrub, scrub_args, scrub_text, secret_values

PASSWORD = "Pa55-w0rd-XYZZY"
API_KEY = "sk-live-SECRET-KEY-0042"
TOKEN = "hf_TOKEN_abcdef99"
SECRETS = (PASSWORD, API_KEY, TOKEN)


def _files_text(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in sorted(root.rglob("*")) if p.is_file())


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} found in {where}"


# -- the scrubbing rule -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["--api-key", "api_key", "HF_TOKEN", "--hf-token", "password", "--db-password",
                                  "OPENAI_API_KEY", "apikey", "client_secret", "access_token", "Authorization"])
def test_names_of_secrets(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["--max-num-batched-tokens", "n_keep", "type_k", "bos_token_id", "url", "--port",
                                  "model_name", "server_args", "kv_cache_dtype", "monkey", "n_tokens"])
def test_names_that_are_not_secrets(name):
    assert not is_secret_name(name)


@pytest.mark.parametrize("text, kept", [
    (f"http://user:{PASSWORD}@host:8000/v1", "http://host:8000/v1"),
    (f"postgresql+psycopg://pdx:{PASSWORD}@db/pdx", "postgresql+psycopg://db/pdx"),
    (f"--api-key {API_KEY} -c 4", f"--api-key {MARK} -c 4"),
    (f"--api-key={API_KEY}", f"--api-key={MARK}"),
    (f"-o api_key={API_KEY} -o n_batch=8", f"-o api_key={MARK} -o n_batch=8"),
    (f"--server-args '--api-key {API_KEY} -c 4'", f"--server-args '--api-key {MARK} -c 4'"),
    (f"https://x.example/v1?token={TOKEN}&n=1", f"https://x.example/v1?token={MARK}&n=1"),
    (f"Authorization: Bearer {TOKEN}", None),
    (f'{{"api_key": "{API_KEY}", "n": 2}}', f'{{"api_key": "{MARK}", "n": 2}}'),
    ("--max-num-batched-tokens 512 -n 128", "--max-num-batched-tokens 512 -n 128"),
    ("the key file is missing", "the key file is missing"),
])
def test_scrub_text(text, kept):
    scrubbed = scrub_text(text)
    assert_no_secret(scrubbed, text)
    if kept is not None:
        assert scrubbed == kept


def test_scrub_args_and_values():
    argv = ["pdx", "bench", "--api-key", API_KEY, f"--hf-token={TOKEN}", "--url", f"http://u:{PASSWORD}@h:1",
            "--server-args", f"--api-key {API_KEY} -c 4", "-o", "n_batch=8"]
    scrubbed = scrub_args(argv)
    assert_no_secret(" ".join(scrubbed), "argv")
    assert scrubbed[-2:] == ["-o", "n_batch=8"] and scrubbed[5:7] == ["--url", "http://h:1"]
    assert secret_values(["--api-key", API_KEY, "-c", "4", f"--token={TOKEN}"]) == [API_KEY, TOKEN]
    nested = scrub({"url": f"http://a:{PASSWORD}@h", "env": {"HF_TOKEN": TOKEN}, "list": [f"--api-key {API_KEY}"],
                    "n": 3})
    assert_no_secret(json.dumps(nested), "nested") and nested["n"] == 3


_secret = st.text(st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters="'\"\\,;&|)]}@/?#"),
                  min_size=6, max_size=24).filter(lambda s: not s.startswith("-") and MARK not in s)
_words = st.lists(st.sampled_from(["-c", "4", "--port", "8000", "pp512", "x=1", "model.gguf"]), max_size=4)


@given(_secret, _words, st.sampled_from(["--api-key", "--hf-token", "--password", "-o api_key=", "--secret="]),
       st.sampled_from([" ", "="]))
def test_a_flagged_secret_never_survives(secret, words, flag, sep):
    text = " ".join(words + [flag + ("" if flag.endswith("=") else sep) + secret] + words)
    assert secret not in scrub_text(text)
    assert secret not in " ".join(scrub_args(text.split()))


@given(_secret, st.sampled_from(["http", "https", "postgresql+psycopg"]), st.text("abc", min_size=1, max_size=5))
def test_a_url_password_never_survives(secret, scheme, user):
    assert secret not in scrub_text(f"see {scheme}://{user}:{secret}@host.example:8000/v1 now")


# -- secrets through the real CLI ------------------------------------------------------------------

def _run_with_secrets(fake_server: str, registry_url: str) -> list[dict]:
    with_password = fake_server.replace("http://", f"http://bench:{PASSWORD}@")
    runs = []
    for given_as in (["--url", with_password], ["-o", f"url={with_password}"]):
        result = run_pdx("bench", "--backend", "openai", *given_as, "--api-key", API_KEY, "-o", "model_name=fake",
                         "-p", "8", "-n", "4", "-r", "1", "--registry", registry_url, "--json")
        assert result.returncode == 0, result.stderr
        assert_no_secret(result.stdout + result.stderr, "bench output")
        runs += json.loads(result.stdout)
    return runs


def test_credentials_never_reach_registry_bundle_report_or_site(fake_server, tmp_path):
    db = tmp_path / "reg.sqlite"
    registry_url = f"sqlite:///{db}"
    runs = _run_with_secrets(fake_server, registry_url)
    assert {r["options"]["url"] for r in runs} == {fake_server}
    assert all(f"--api-key {MARK}" in r["command"] and "127.0.0.1" in r["command"] for r in runs)
    assert_no_secret(db.read_bytes().decode("latin-1"), "the registry file")
    for flags in ([], ["--redact"]):
        bundle = tmp_path / f"b{len(flags)}.json"
        result = run_pdx("export", "-o", str(bundle), *flags, "--registry", registry_url)
        assert result.returncode == 0, result.stderr
        assert_no_secret(bundle.read_text(), f"a bundle {flags}")
    shown = run_pdx("show", runs[0]["id"], "--registry", registry_url)
    assert_no_secret(shown.stdout + shown.stderr, "pdx show")
    report = tmp_path / "r.html"
    assert run_pdx("report", "-o", str(report), "--registry", registry_url).returncode == 0
    assert_no_secret(report.read_text(), "the report")
    site = tmp_path / "site"
    result = run_pdx("publish", str(site), "--registry", registry_url)
    assert result.returncode == 0, result.stderr
    assert_no_secret(_files_text(site), "the site")


# -- export --redact ------------------------------------------------------------------------------

HOST = "gpubox"
LEAKS = ["gpubox", "GPUBOX", "lab.example.org", "10.1.2.3", "fe80::1", "2001:db8::5", "ann", "bob", "fileserver",
         "corp.acme", "GPU01", "carol", "dave", "erin"]
HOSTILE_RECORD = {
    "environment": {"hostname": f"{HOST}.lab.example.org", "command": "pdx bench -m /home/ann/m.gguf"},
    "command": (r"pdx bench --url http://GPU01.corp.acme.com:8000/v1;cat /Users/bob/x|grep ~/s/y `ls /home/carol/z`"
                r" {/home/dave/r} >/home/erin/o -m=C:\Users\ann\m.gguf \\fileserver\share\m.gguf"),
    "nested": {"deep": [{"error": f"connect to 10.1.2.3:8000 failed; [fe80::1%eth0] 2001:db8::5 {HOST.upper()}"
                                  f".lab.example.org {HOST} gpu01 at 09:13:05"}]},
    "engine": {"details": {"server_command": f"vllm serve /home/ann/m --api-key {API_KEY}"}},
    "model": {"name": "llama-3.1-8b", "path": "/home/ann/models/m.gguf"},
    "tests": [{"name": "tg128@d4096"}, {"name": "pp512/b8"}],
    "source": "https://www.apple.com/newsroom/2023/01/m2/",
}


def test_redact_removes_every_host_address_and_user_path_in_the_whole_record():
    from pdx.registry.redact import redact_record

    redacted = redact_record(json.loads(json.dumps(HOSTILE_RECORD)))
    text = json.dumps(redacted)
    for leak in LEAKS + [API_KEY]:
        assert leak not in text, leak
    assert redacted["model"] == {"name": "llama-3.1-8b", "path": "<redacted>/m.gguf"}
    assert [t["name"] for t in redacted["tests"]] == ["tg128@d4096", "pp512/b8"]  # not paths, not hosts
    assert redacted["source"] == HOSTILE_RECORD["source"]  # a public source pdx's catalog cites
    assert "09:13:05" in text and redacted["environment"]["hostname"] == "<redacted-host>"


# The user's part in capitals, so it cannot hide inside the lower-case rest ("cmd", "<redacted>").
_user = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=3, max_size=10)
_file = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=10)


@given(_user, _file, st.sampled_from([" ", ";", "|", "`", "{", ">", "=", "'", "("]),
       st.sampled_from(["/home/{u}/{f}.gguf", "/Users/{u}/{f}.gguf", "~/{u}/{f}.gguf", "C:\\Users\\{u}\\{f}.gguf",
                        "\\\\{u}\\share\\{f}.gguf"]))
def test_a_user_path_after_any_separator_keeps_only_its_file_name(user, name, sep, form):
    from pdx.registry.redact import redact_text

    path = form.format(u=user, f=name)
    redacted = redact_text(f"cmd{sep}{path} next")
    assert user not in redacted.replace(f"{name}.gguf", "") and f"<redacted>/{name}.gguf" in redacted
