"""How an engine's version reads, one rule for a run pdx made and a file it imported."""

from __future__ import annotations


def llama_cpp_build(number: object) -> int | None:
    """llama.cpp's build number (its commit count) where it is real. A source without its history
    counts 1 (llama-cpp-python's sdist holds a shallow clone) or 0 (a release tarball): that reads as
    the first build of llama.cpp, so it is no number at all."""
    return number if isinstance(number, int) and not isinstance(number, bool) and number > 1 else None


def llama_cpp_version(number: object) -> str | None:
    """``b<build>`` as llama.cpp names its releases; None where the build number is not real."""
    build = llama_cpp_build(number)
    return f"b{build}" if build else None


def engine_text(engine: dict) -> str:
    """A stored run's engine in words: name, version, commit, and what pdx built it from where it did
    (``llama.cpp 0c1e570 (built from llama-cpp-python 0.3.36)``)."""
    text = " ".join(str(x) for x in (engine["name"], engine.get("version"), engine.get("commit")) if x)
    origin = (engine.get("details") or {}).get("built_from")
    return f"{text} (built from {origin})" if origin else text
