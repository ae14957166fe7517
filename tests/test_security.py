"""Security: secrets never recorded, hostile names rendered inert, publish kept inside its folder.

Runs with secrets go through the real CLI and pdx's real server backend against
tests/fake_openai_server.py (the local OpenAI-style server the serving tests use;
a real server is not needed to see what pdx records); the registry file itself,
bundles (redacted or not), the report, every site file and the server's log are
searched for the secrets. Hostile names are set on stored runs after the registry
read them, so pages are tested against records the registry's own checks might refuse.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conftest import FAKE_SERVER, assert_one_line_error, run_pdx
from runfactory import START, add_run, fill, hardware, model
from pdx.base.secrets import MARK, is_placeholder, is_secret_name, scrub, scrub_args, scrub_text, secret_values
from pdx.reports.results import read_runs

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
                  min_size=6,
                  max_size=24).filter(lambda s: not s.startswith("-") and MARK not in s and not is_placeholder(s))
_words = st.lists(st.sampled_from(["-c", "4", "--port", "8000", "pp512", "x=1", "model.gguf"]), max_size=4)


@given(_secret, _words, st.sampled_from(["--api-key", "--hf-token", "--password", "-o api_key=", "--secret="]),
       st.sampled_from([" ", "="]))
@example("nUMBER", [], "--api-key", " ")  # a placeholder's word in mixed case is a value, hidden
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


@pytest.fixture
def registry(registry_url):
    from pdx.registry import Registry

    return Registry(registry_url)


# -- hostile names render inert ---------------------------------------------------------------------

PAYLOADS = ["<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "javascript:alert(3)", "vllm one=2",
            "</svg><svg onload=alert(4)>", "{{ 7*7 }}", "nul\x00and\x1bescape"]
XSS = " ".join(PAYLOADS)


class _Markup(HTMLParser):
    """Every element and attribute of a page, inline SVG included."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def assert_inert(html: str, page) -> None:
    parser = _Markup()
    parser.feed(html)
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    # Only pdx's own: the sort script (inline in a report), on "what to buy" its script and its data
    # (JSON, never run), on the runs list its filter and the filter's data (runs/search.js, below).
    own = [{}, {"src": "assets/sort.js"}, {"src": "assets/buy.js"}, {"type": "application/json", "id": "buy-data"},
           {"src": "assets/runs.js"}, {"src": "search.js"}]
    assert all({k: v.rsplit("../", 1)[-1] for k, v in a.items()} in own for a in scripts), (page, scripts)
    assert len(scripts) <= (3 if str(page).endswith(("buy.html", "runs/index.html")) else 1), page
    for tag, attrs in parser.tags:
        assert tag not in ("img", "iframe", "object", "embed", "foreignobject"), (page, tag)
        for name, value in attrs.items():
            assert not name.startswith("on"), (page, tag, name)
            assert not (value or "").replace(" ", "").lower().startswith("javascript:"), (page, tag, name)
    assert "\x00" not in html and "\x1b" not in html, page


def _hostile_runs(registry) -> list[dict]:
    """Runs whose every free-text field carries the payloads (set after storing: the registry's own
    checks may refuse some of them, and a site must survive a record that got in another way)."""
    ids = [add_run(registry, hardware("Apple M2 Max", 1), model("tiny", 3), "llamacpp-bench",
                   START.replace(minute=m), random.Random(m)) for m in (0, 1)]
    runs = read_runs(registry, samples=True)
    assert {r["id"] for r in runs} == set(ids)
    for run in runs:
        run["model"]["name"] = f"model {XSS}"
        run["hardware"]["name"] = f"chip {XSS}"
        run["hardware"]["cpu"]["name"] = f"cpu {XSS}"
        run["backend"] = f"vllm one=2 {XSS}"
        run["tags"] = [XSS, f"k={XSS}"]
        run["options"] = {"note": XSS, f"k {XSS}": "v"}
        run["command"] = f"pdx bench {XSS}"
        run["error"] = f"tg128: {XSS}"
        run["status"] = "partial"
        run["tests"][0]["error"] = XSS
        # A chip figure's source link, as a bundle may carry it: its hub chip page links web URLs only.
        run["ceiling_basis"] = {"source": "catalog", "bandwidth": 4e11, "chip": {
            "bandwidth": {"value": 400, "url": "javascript:alert(5)"},
            "memory": {"value": 64, "url": " JaVaScRiPt:alert(6)"},
            "tflops": {"value": 27, "url": "https://vendor.example/spec"}}}
    return runs


def test_payloads_in_every_free_text_field_render_inert(registry, tmp_path):
    from pdx.reports.report.single_file import write_report
    from pdx.reports.site.builder import publish

    runs = _hostile_runs(registry)
    report = tmp_path / "report.html"
    write_report(runs, report)
    root = tmp_path / "site"
    publish(runs, root)
    pages = [report, *sorted(root.rglob("*.html"))]
    assert len(pages) >= 6
    (chip,) = [p for p in pages if p.parent.name == "chips"]
    assert '<dt>bandwidth</dt><dd>400</dd>' in chip.read_text()  # the figure stays, its script link does not
    assert '<dd>27 (<a href="https://vendor.example/spec">source</a>)</dd>' in chip.read_text()
    for page in pages:
        assert_inert(page.read_text(), page)
    # The filter's data runs as a script: it must be one JSON literal, the payloads strings inside it.
    search = (root / "runs" / "search.js").read_text()
    assert search.startswith("window.PDX_RUNS = {") and search.endswith("};\n")
    data = json.loads(search.removeprefix("window.PDX_RUNS = ").removesuffix(";\n"))
    assert {row[5] for row in data["rows"]} == {f"vllm one=2 {XSS}"}
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report.read_text()
    svgs = list((root / "assets" / "charts").glob("*.svg"))
    assert svgs and any("vllm one=2" in svg.read_text() for svg in svgs)  # the name is drawn, as text
    for svg in svgs:
        assert_inert(svg.read_text(), svg)
    for data in root.rglob("*.json"):
        json.loads(data.read_text())


def test_the_svg_check_reads_markup_not_text():
    from pdx.reports.charts.render import unsafe_markup

    ok = '<svg xmlns="http://www.w3.org/2000/svg"><text>vllm one=2 javascript:alert(1) &lt;script&gt;</text></svg>'
    assert unsafe_markup(ok) is None
    for bad in ('<svg><script>alert(1)</script></svg>', '<svg><rect onclick="x()"/></svg>',
                '<svg xmlns="http://www.w3.org/2000/svg"><foreignObject/></svg>',
                '<svg xmlns:xlink="http://www.w3.org/1999/xlink"><a xlink:href=" java\tscript:alert(1)"/></svg>',
                '<svg><a href="JAVASCRIPT:x"/></svg>', '<svg><animate attributeName="href" to="x"/></svg>',
                '<svg><text>unclosed</svg>', '<html/>'):
        assert unsafe_markup(bad), bad


def test_non_finite_figures_make_valid_site_json(registry, tmp_path):
    from pdx.reports.site.builder import publish

    runs = _hostile_runs(registry)
    runs[0]["tests"][0]["engine"] = {"nan": float("nan"), "inf": float("inf"), "neg": float("-inf")}
    runs[0]["threads"] = float("nan")
    root = tmp_path / "site"
    publish(runs, root)
    page = json.loads((root / "runs" / f"{runs[0]['id']}.json").read_text())
    assert page["run"]["tests"][0]["engine"] == {"nan": None, "inf": None, "neg": None}
    for data in root.rglob("*.json"):
        json.loads(data.read_text(), parse_constant=lambda word: pytest.fail(f"{word} in {data}"))


# -- publish stays inside its own files -----------------------------------------------------------

@pytest.fixture
def stored(registry):
    for m in range(3):
        add_run(registry, hardware("AMD EPYC 9654", 1), model(f"m{m}", m), "llamacpp-bench", START.replace(minute=m),
                random.Random(m), tests=[], repetitions=1)
    return registry


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


def test_publish_refuses_root_home_and_folders_it_did_not_make(stored, registry_url, tmp_path):
    from pdx.contract.errors import PdxError
    from pdx.reports.site.writer import SiteWriter

    for special in ("/", str(Path.home())):
        with pytest.raises(PdxError, match="cannot publish into"):
            SiteWriter(special)
    home = tmp_path / "home"
    home.mkdir()
    assert_one_line_error(run_pdx("publish", str(home), "--registry", registry_url, env={"HOME": str(home)}),
                          "the home folder")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    before = _tree(theirs)
    assert_one_line_error(run_pdx("publish", str(theirs), "--registry", registry_url), "no site pdx made there")
    assert _tree(theirs) == before


def test_a_planted_manifest_deletes_and_overwrites_nothing(stored, tmp_path):
    from pdx.contract.errors import PdxError
    from pdx.reports.site.builder import publish

    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    root = tmp_path / "site"
    root.mkdir()
    for name in ("notes.txt", "index.html", "runs/old.html"):
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(f"the user's {name}")
    planted = {"files": {"notes.txt": "0" * 64, "runs/old.html": "1" * 64, "../outside.txt": "2" * 64,
                         "/etc/hostname": "3" * 64}}
    (root / "pdx-site.json").write_text(json.dumps(planted))
    mine = {k: v for k, v in _tree(root).items() if k != "pdx-site.json"}
    with pytest.raises(PdxError, match="index.html is there and pdx did not write it"):
        publish(read_runs(stored, samples=True), root)
    (root / "index.html").unlink()
    del mine["index.html"]
    publish(read_runs(stored, samples=True), root)  # the rest is the user's: left alone
    assert {k: v for k, v in _tree(root).items() if k in mine} == mine and outside.read_text() == "keep"
    (root / "pdx-site.json").write_text(json.dumps({"files": ["notes.txt", "runs/old.html"]}))  # format 1
    with pytest.raises(PdxError):
        publish(read_runs(stored, samples=True)[:1], root)
    assert {k: v for k, v in _tree(root).items() if k in mine} == mine


def test_symlinks_inside_the_folder_are_never_followed(stored, tmp_path):
    from pdx.contract.errors import PdxError
    from pdx.reports.site.builder import publish

    runs = read_runs(stored, samples=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.html").write_text("keep")
    root = tmp_path / "site"
    publish(runs, root)
    (root / "runs" / f"{runs[0]['id']}.html").unlink()
    (root / "runs" / f"{runs[0]['id']}.html").symlink_to(outside / "victim.html")  # a page, now a link out
    (root / "hardware").rename(tmp_path / "moved")
    (root / "hardware").symlink_to(outside, target_is_directory=True)  # a folder, now a link out
    with pytest.raises(PdxError, match="symbolic link"):
        publish(runs, root)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.html"]
    (root / "hardware").unlink()
    (tmp_path / "moved").rename(root / "hardware")
    with pytest.raises(PdxError, match="symbolic link"):  # the page that is a link now
        publish(runs, root)
    publish(runs[1:], root)  # the linked page is stale now: its link is not pdx's to remove, nor its target
    assert sorted(p.name for p in outside.iterdir()) == ["victim.html"]
    assert (outside / "victim.html").read_text() == "keep"
    assert (root / "runs" / f"{runs[0]['id']}.html").is_symlink()


def test_two_concurrent_publishes_leave_a_complete_site(tmp_path):
    import subprocess
    import sys

    from pdx.registry import Registry

    registry_url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    fill(Registry(registry_url), 6, n_hardware=2, n_models=2)
    root = tmp_path / "site"
    procs = [subprocess.Popen([sys.executable, "-m", "pdx", "publish", str(root), "--registry", registry_url],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert any(code == 0 for code, _ in results), results
    for code, err in results:
        if code != 0:
            lines = [line for line in err.splitlines() if line.strip()]
            assert len(lines) == 1 and "another pdx publish" in lines[0], err
    manifest = json.loads((root / "pdx-site.json").read_text())
    for relative, digest in manifest["files"].items():
        assert hashlib.sha256((root / relative).read_bytes()).hexdigest() == digest, relative
    for page in root.rglob("*.html"):
        for link in re.findall(r'href="([^"]+)"', page.read_text()):
            if "://" not in link and not link.startswith("#"):
                assert (page.parent / link.split("#")[0]).exists(), (page, link)


# -- a server pdx starts: its flags are stored without their secrets, and its log is scrubbed ---------

# The server pdx "starts": tests/fake_openai_server.py, behind a few lines that print the flags they
# were given (as a real server logs its command line) and drop them.
_WRAPPER = ("import runpy, sys; print('started with', sys.argv[1:], flush=True); "
            "sys.argv = [sys.argv[0], '--port', sys.argv[1]]; runpy.run_path({!r}, run_name='__main__')")


def test_server_args_secrets_never_reach_the_record_or_the_log(tiny_gguf, registry_url, monkeypatch):
    import sys

    from pdx import api
    from pdx.base import plugin_manager
    from pdx.measure.serving.backend import SERVER_OPTIONS
    from pdx.measure.serving.generic import OpenAIBackend
    from pdx.domain.workload import build_workload

    class StartedServer(OpenAIBackend):
        name = "started-fake"
        options = SERVER_OPTIONS

        @classmethod
        def server_availability(cls):
            from pdx.contract.backend import Availability

            return Availability(True, version="1")

        def server_command(self, model, port):
            return [sys.executable, "-c", _WRAPPER.format(str(FAKE_SERVER)), str(port)]

    real = plugin_manager.backends
    monkeypatch.setattr(plugin_manager, "backends", lambda: {**real(), StartedServer.name: StartedServer})
    server_args = f"--api-key {API_KEY} --hf-token={TOKEN} -c 4"
    config = api.BenchConfig(backend=StartedServer.name, model=str(tiny_gguf), api_key=API_KEY,
                             workload=build_workload(n_prompt="8", n_gen="4", repetitions=1, warmup=0),
                             options={"server_args": server_args, "model_name": "fake"},
                             argv=["pdx", "bench", "--server-args", server_args, "--api-key", API_KEY])
    run = api.run_benchmark(config, api.open_registry(registry_url))
    assert run["status"] == "complete", run["error"]
    settings, details = run["engine"]["settings"], run["engine"]["details"]
    assert settings["server_args"] == f"--api-key {MARK} --hf-token={MARK} -c 4"
    assert details["server_command"].endswith(f"--api-key {MARK} --hf-token={MARK} -c 4")
    assert_no_secret(json.dumps(run), "the stored run")
    log = Path(details["server_log"]).read_text()
    assert "started with" in log and "-c" in log
    assert_no_secret(log, "the server's log")


def test_an_error_naming_a_url_shows_no_password(registry_url):

    line = assert_one_line_error(run_pdx("bench", "--backend", "openai", "--url", f"http://u:{PASSWORD}@127.0.0.1:1",
                                         "--api-key", API_KEY, "--registry", registry_url), "cannot reach a server")
    assert_no_secret(line, "the error")


def test_pdx_report_renders_a_backend_named_like_an_attribute(registry, registry_url, tmp_path):
    add_run(registry, hardware("Apple M2 Max", 1), model("tiny", 3), "vllm one=2", START, random.Random(0))
    out = tmp_path / "r.html"
    result = run_pdx("report", "-o", str(out), "--registry", registry_url)
    assert result.returncode == 0, result.stderr
    assert "vllm one=2" in out.read_text()
    assert_inert(out.read_text(), out)
