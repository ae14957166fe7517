"""What ``--model`` names: a model file or directory, a synthetic model
(``synth:SHAPE[:TYPE]``, written in each backend's own format), or a Hugging
Face Hub repo id (for backends that load them). Paths are read at once, so a
bad one fails before any engine work; the other two wait for the backend."""

from __future__ import annotations

from dataclasses import dataclass

from pdx.contract.errors import ModelError, PdxError
from pdx.domain.models import ModelInfo, hub, identify
from pdx.domain.synth import ensure_gguf, ensure_hf
from pdx.domain.synth.shapes import DEFAULT_SHAPE, get_shape

SYNTH_PREFIX = "synth:"
# A weight type named once for every format: (GGUF type, HF-layout type); None where a format has none.
SYNTH_TYPES = {"f32": ("f32", "float32"), "f16": ("f16", "float16"), "bf16": (None, "bfloat16"),
               "q8": ("q8_0", "mlx-q8"), "q4": ("q4_0", "mlx-q4")}
_TYPE_ALIASES = {name: generic for generic, names in SYNTH_TYPES.items() for name in names if name}


@dataclass(frozen=True)
class SynthModel:
    shape: str | None = None  # None: the default shape
    dtype: str | None = None  # a SYNTH_TYPES key; None: the backend's default type

    def identify(self, formats: tuple[str, ...], default_dtype: str) -> ModelInfo:
        layout = "gguf" if "gguf" in formats else "hf" if "hf" in formats else None
        if layout is None:
            raise PdxError("this backend loads no model pdx can write", "give one with --model")
        dtype = default_dtype
        if self.dtype:
            dtype = SYNTH_TYPES[self.dtype][0 if layout == "gguf" else 1]
            if dtype is None:
                raise ModelError(f"synth type {self.dtype} has no {layout} form",
                                 f"choose one of: {', '.join(k for k, v in SYNTH_TYPES.items() if v[layout == 'hf'])}")
        make = ensure_gguf if layout == "gguf" else ensure_hf
        return identify(make(self.shape or DEFAULT_SHAPE, dtype))


@dataclass(frozen=True)
class HubModel:
    repo_id: str

    def identify(self, backend: type) -> ModelInfo:
        if not backend.hub_models:
            raise ModelError(f"model not found: {self.repo_id}",
                             f"give a local path (backend {backend.name} loads no Hugging Face Hub models)")
        path = hub.snapshot(self.repo_id)
        info = identify(path)
        info.name = self.repo_id
        info.extra["hub"] = {"repo_id": self.repo_id, "revision": path.name}
        return info


def parse_synth(text: str) -> SynthModel:
    shape, _, dtype = text.removeprefix(SYNTH_PREFIX).partition(":")
    get_shape(shape or DEFAULT_SHAPE)  # an unknown shape fails here, in one line
    if dtype and dtype.lower() not in SYNTH_TYPES and dtype.lower() not in _TYPE_ALIASES:
        raise ModelError(f"unknown synth type {dtype!r}", f"choose one of: {', '.join(SYNTH_TYPES)}")
    generic = _TYPE_ALIASES.get(dtype.lower(), dtype.lower()) if dtype else None
    return SynthModel(shape.lower() or None, generic)


def parse(text: str | None) -> ModelInfo | SynthModel | HubModel | None:
    if not text:
        return None
    if text.startswith(SYNTH_PREFIX):
        return parse_synth(text)
    if hub.is_repo_id(text):
        return HubModel(text)
    return identify(text)  # a path: read now, so a missing one fails at once and looks nothing up


def resolve(given: ModelInfo | SynthModel | HubModel | None, backend: type) -> ModelInfo:
    """The model ``backend`` runs: the given one, or a synthetic one in its format (the default shape if none)."""
    if isinstance(given, HubModel):
        model = given.identify(backend)
    elif isinstance(given, ModelInfo):
        model = given
    else:
        model = (given or SynthModel()).identify(backend.model_formats, backend.default_dtype)
    if model.format not in backend.model_formats:
        raise PdxError(f"model {model.path} is {model.format}, which backend {backend.name} does not load",
                       f"give a {' or '.join(backend.model_formats)} model")
    return model
