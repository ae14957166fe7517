"""llama-quantize in pdx's llama.cpp build: a cached build from before the
tool was added gets just the tool, not a rebuild; bad quantise requests are
one line. The compile step is replaced here by one that writes a stub
binary (a real compile takes minutes: tests/test_llamacpp_moe.py runs the
real tool)."""

import json
from pathlib import Path


from pdx.plugins.llamacpp import build

from conftest import assert_one_line_error, run_pdx


def _cached_build(root: Path) -> None:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "libllama.so").write_text("old")
    for tool in build.TARGETS:
        (root / "bin" / tool).write_text("old")
    (root / build.BUILD_RECORD).write_text(json.dumps({"version": "0.3.36", "flags": build.cmake_flags(),
                                                       "built_at": "2026-01-01T00:00:00+00:00"}))


def test_a_build_without_llama_quantize_gets_only_that_tool(monkeypatch, tmp_path):
    monkeypatch.setenv("PDX_CACHE_DIR", str(tmp_path / "cache"))  # never the shared build cache
    root = build.build_dir(build.LLAMA_CPP_PYTHON_VERSION, build.cmake_flags())
    assert str(root).startswith(str(tmp_path))
    _cached_build(root)
    compiled = []

    def fake_compile(sdist, tmp, flags, targets, jobs, log, **_):  # stands in for cmake: writes the targets
        compiled.append(list(targets))
        (tmp / "build" / "bin").mkdir(parents=True)
        for target in targets:
            (tmp / "build" / "bin" / target).write_text("new")
        (tmp / "build" / "bin" / "libllama-quantize-impl.so").write_text("lib")  # what the tool links
        (tmp / "build" / "bin" / "libllama.so").write_text("rebuilt")  # already there: left alone
        return tmp / "build"

    monkeypatch.setattr(build, "_compile", fake_compile)
    monkeypatch.setattr(build, "_sdist", lambda version, log: Path("unused.tar.gz"))
    monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/bin/" + name)
    result = build.install(bindings=False, say=lambda line: None)
    assert compiled == [list(build.TOOLS)] and result.root == root
    assert (root / "bin" / "llama-quantize").read_text() == "new"
    assert (root / "bin" / "libllama-quantize-impl.so").read_text() == "lib"
    assert all((root / "bin" / t).read_text() == "old" for t in [*build.TARGETS, "libllama.so"])  # untouched
    build.install(bindings=False, say=lambda line: None)
    assert len(compiled) == 1  # complete now: nothing compiled again


def test_quantize_refuses_types_it_does_not_make_and_a_build_without_the_tool(tmp_path):
    source = tmp_path / "m.gguf"
    source.write_bytes(b"GGUF")
    assert_one_line_error(run_pdx("llamacpp", "quantize", str(source), str(tmp_path / "o.gguf"), "--type", "Q9_K"),
                          "llama-quantize type 'Q9_K'", "Q4_K_M")
    if not build.find_build() or not build.find_build().tool("llama-quantize").exists():
        assert_one_line_error(run_pdx("llamacpp", "quantize", str(source), str(tmp_path / "o.gguf"),
                                      "--type", "Q4_K_M"), "no llama-quantize", "pdx llamacpp install")
    assert not (tmp_path / "o.gguf").exists()
