"""The type a plugin registers to build its engine at a version pdx does not have installed
(``pdx_register_engine_builders``): ``pdx bisect`` builds commits of an engine's source, ``pdx bench
--engine-version`` builds (or finds) releases. Either way the result is a set of backend options that
point the plugin's backend at that build, so every run is made and stored as any other."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pdx.contract.errors import PdxError


@dataclass(frozen=True)
class BuiltEngine:
    """One build, ready to bench: the options that select it, how it is named, and whether it was
    already in the cache (True) or compiled now."""

    options: dict[str, str]
    label: str
    cached: bool


# (source checkout, commit, folder the builds are kept in or None for pdx's cache, say) -> the build
CommitBuild = Callable[[Path, str, "Path | None", Callable[[str], None]], BuiltEngine]
# (release, say) -> the build
ReleaseBuild = Callable[[str, Callable[[str], None]], BuiltEngine]


@dataclass(frozen=True)
class EngineBuilder:
    """How pdx builds one engine: ``name`` as ``--engine`` takes it, the backend that benches its
    builds, and a build function per kind of version it knows (None: that kind is not offered)."""

    name: str
    backend: str
    commit: CommitBuild | None = field(default=None, compare=False)
    release: ReleaseBuild | None = field(default=None, compare=False)
    releases: str = ""  # what a release is, for messages: "llama-cpp-python releases"
    plugin: str = ""


def check_builder(builder: object) -> EngineBuilder:
    """A registered builder, vetted before pdx relies on it."""
    if not isinstance(builder, EngineBuilder):
        raise PdxError(f"it registered {builder!r}, which is not a pdx.contract.engine_build.EngineBuilder")
    if not builder.name or not builder.backend:
        raise PdxError(f"engine builder {builder!r} has no name or no backend")
    if builder.commit is None and builder.release is None:
        raise PdxError(f"engine builder {builder.name!r} builds neither commits nor releases")
    for kind in (builder.commit, builder.release):
        if kind is not None and not callable(kind):
            raise PdxError(f"engine builder {builder.name!r}: {kind!r} is not callable")
    return builder
