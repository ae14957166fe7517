"""``mlx``: mlx-lm models measured by pdx's clock (see :mod:`.measure`),
with mlx-lm's own figures beside them (see :mod:`.own_figures`)."""

from __future__ import annotations

import sys
from typing import Iterator, Mapping

from pdx.contract.backend import Availability, Backend, BackendConfig, EngineInfo, Sample
from pdx.measure.environment import installed_version
from pdx.contract.errors import ModelError, PdxError
from pdx.domain.hardware import apple
from pdx.domain.models import ModelInfo, hf_tensor_names
from pdx.plugins.mlx import settings as mlx_settings
from pdx.plugins.mlx import speculation
from pdx.plugins.mlx.measure import Draft, Measure
from pdx.plugins.mlx.own_figures import mlx_lm_figures, own_rates
from pdx.contract import build
from pdx.domain.workload import TestSpec


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def refused_layout(model: ModelInfo) -> ModelError | None:
    """A layout mlx-lm cannot load, said before it fails obscurely: mlx-lm (0.32) reads gpt-oss's fused
    experts (``mlp.experts.gate_up_proj``) only as the MXFP4 blocks of OpenAI's checkpoints; unquantised, in
    transformers' layout, its sanitize splits them on the wrong axis and the load fails on unknown weights."""
    if model.architecture != "gpt_oss":
        return None

    if any(name.endswith(".mlp.experts.gate_up_proj") for name in hf_tensor_names(model.path)):
        return ModelError(f"mlx-lm cannot load {model.path}: gpt-oss experts unquantised in transformers' fused "
                          f"layout (gate_up_proj), which mlx-lm reads only as MXFP4 blocks",
                          "give an MXFP4 or MLX-converted gpt-oss; a synthetic one: "
                          "`pdx model synth --format hf --type mlx-q8` (or mlx-q4, mlx-lm's own layout)")
    return None


def _load(model: ModelInfo):
    """The model and tokenizer mlx-lm loads from ``model``'s directory, or a one-line error."""
    from mlx_lm import load as mlx_lm_load

    if refused := refused_layout(model):
        raise refused
    try:  # a local directory: mlx-lm looks nothing up on the network for it
        return mlx_lm_load(model.path)
    except Exception as exc:  # mlx-lm and transformers fail in many ways on a model they cannot read
        raise ModelError(f"mlx-lm cannot load {model.path}: {_first_line(exc)}",
                         "give an MLX or Hugging Face model directory of an architecture mlx-lm supports") from None


def mac_chip() -> dict | None:
    """The Apple chip from ``sysctl``, matched to the catalog (None off a Mac)."""
    if sys.platform != "darwin":
        return None

    return apple.describe(apple.read_sysctl())


class Mlx(Backend):
    name = "mlx"
    engine = "MLX"
    summary = "mlx-lm models in-process: Metal on Apple Silicon, the CPU elsewhere"
    model_formats = ("hf",)
    options = mlx_settings.OPTIONS
    hub_models = True
    # MLX's CPU backend emulates float16 and quantised kernels (10-50x slower); Metal runs them natively.
    default_dtype = "float16" if mlx_settings.ON_MAC else "float32"

    @classmethod
    def availability(cls, options: Mapping[str, str] | None = None) -> Availability:
        return mlx_settings.availability(dict(options or {}))

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        self.mx = mlx_settings.import_mlx()
        self.settings = mlx_settings.parse_settings(config, self.mx, self.option_values)
        self.model: object = None  # mlx-lm's model and tokenizer, once loaded
        self.tokenizer: object = None
        self.measure: Measure | None = None
        self._infos: dict[TestSpec, dict] = {}  # what test_info reports, per test
        self._current: TestSpec | None = None

    def load(self, model: ModelInfo) -> EngineInfo:
        mx = self.mx
        from mlx_lm.generate import wired_limit

        mx.set_default_device(mx.gpu if self.settings.device == "gpu" else mx.cpu)
        spec = self.settings.speculation
        draft = speculation.draft_info(spec, model) if spec else None  # a bad draft fails before the big load
        self.model, tokenizer = _load(model)
        tokenizer.eos_token_ids = set()  # every repetition generates exactly the tokens its test names
        self.tokenizer = tokenizer
        self.wired_limit = wired_limit
        vocab = model.n_vocab or int(getattr(getattr(self.model, "args", None), "vocab_size", 0))
        drafting = Draft(_load(draft)[0], spec.num_draft_tokens) if spec and draft else None
        self.measure = Measure(mx, self.model, vocab, self.settings.prefill_step_size, self.config.seed, drafting)
        versions = {p: installed_version(p) for p in ("mlx", "mlx-lm", "mlx-metal", "mlx-cpu")}
        decode = "speculative (mlx_lm speculative_generate_step)" if spec else "pipelined (mx.async_eval)"
        settings = self.settings.to_dict() | {"mlx_lm": versions["mlx-lm"], "decode": decode, "sampler": "argmax"}
        if spec and draft:
            settings["speculation"] = speculation.record(spec, draft)
        return EngineInfo(
            engine=self.engine,
            version=versions["mlx"],
            settings=settings,
            details={
                "device": self.settings.device,  # where the ceilings look: the chip's GPU, or this CPU's probes
                "probe_device": f"mlx:{self.settings.device}",  # measured through MLX itself (pdx hw probe --device)
                "device_info": dict(mx.device_info()),
                "packages": {k: v for k, v in versions.items() if v},
                "chip": mac_chip(),
            },
        )

    def unsupported(self, test: build.Shape) -> str | None:
        # Raised, not a reason to skip: a run asked to speculate must not be stored as if its batched
        # tests were merely left out. The runner asks before the test runs; a run of -b 1,2 still
        # measures its batch-1 tests first (the backend sees no workload before then).
        if self.settings.speculation and (refused := speculation.refused_batch(test.batch)):
            raise refused
        return super().unsupported(test)

    def run(self, test: TestSpec, repetitions: int, warmup: int) -> Iterator[Sample]:
        if self.measure is None:
            raise PdxError("mlx: load() must come before run()")
        # An adaptive run asks again for more samples of the same test: one record, mlx-lm run once.
        info = self._infos.setdefault(test, {"device": self.settings.device,
                                             "prefill_step_size": self.settings.prefill_step_size})
        first_call, self._current = "peak_memory_bytes" not in info, test
        with self.wired_limit(self.model):
            for i in range(warmup + repetitions):
                sample = self.measure.once(test)
                info["peak_memory_bytes"] = max(info.get("peak_memory_bytes", 0), sample.engine["peak_memory_bytes"])
                if i >= warmup:
                    yield sample
            if first_call and self.settings.mlx_lm_runs:
                info |= self._mlx_lm_figures(test)

    def _mlx_lm_figures(self, test: TestSpec) -> dict:
        try:
            figures = mlx_lm_figures(self.measure, self.tokenizer, test, self.settings.mlx_lm_runs)
        except Exception as exc:  # a side figure must not cost the measured samples
            return {"mlx_lm": {"error": _first_line(exc)}}
        return {"mlx_lm": figures, "own_rates": own_rates(test, figures)}

    def test_info(self) -> dict:
        return self._infos.get(self._current, {}) if self._current is not None else {}

    def close(self) -> None:
        self.model = self.tokenizer = self.measure = None
