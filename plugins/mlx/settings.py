"""The MLX backend's engine options, and what MLX is and runs on here.

MLX picks its device itself (the Metal GPU on a Mac, else the CPU); ``-o
device=`` overrides it, and asking for a GPU MLX does not have here fails in
one line instead of falling back silently.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import asdict, dataclass
from typing import Mapping

from pdx.contract.backend import Availability, BackendConfig, Option
from pdx.measure.environment import installed_version
from pdx.contract.errors import PdxError
from pdx.plugins.mlx.speculation import OPTIONS as SPECULATION_OPTIONS, Speculation, from_options

OPTIONS = {
    "device": "gpu (Metal on an Apple Silicon Mac) or cpu (default: gpu where MLX has one, else cpu)",
    "prefill_step_size": Option(help="prompt tokens per forward pass in prefill (as mlx-lm)", default=2048,
                                kind="int", minimum=1),
    "mlx_lm_runs": Option(help="runs of mlx-lm's own generate per test, for its prompt_tps/generation_tps (0: none)",
                          default=1, kind="int", minimum=0),
} | SPECULATION_OPTIONS
ON_MAC = sys.platform == "darwin" and platform.machine() == "arm64"
INSTALL_HINT = 'pip install "mlx-lm"' if ON_MAC else 'pip install "mlx-lm[cpu]" (MLX\'s CPU backend on Linux)'


@dataclass(frozen=True)
class MlxSettings:
    device: str  # "gpu" or "cpu"
    prefill_step_size: int  # read (or defaulted) by OPTIONS' declarations, as mlx_lm_runs
    mlx_lm_runs: int
    # kept out of to_dict: the run records it apart, with the draft's identity (see speculation.record)
    speculation: Speculation | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "speculation"}


def import_mlx():
    """``mlx.core``, or ImportError when MLX (or a working build of it) is not installed."""
    import mlx.core as mx

    mx.default_device()  # a package without a backend for this machine fails here
    return mx


def chosen_device(options: dict, mx) -> str:
    """``-o device``, else the GPU where MLX has one; a GPU it does not have is an error, never a fallback."""
    has_gpu = bool(mx.is_available(mx.gpu))
    device = options.get("device", "").lower() or ("gpu" if has_gpu else "cpu")
    if device not in ("gpu", "cpu"):
        raise PdxError(f"-o device={device}: use gpu or cpu")
    if device == "gpu" and not has_gpu:
        where = f"{platform.system()} {platform.machine()}"
        raise PdxError(f"MLX has no GPU on this machine ({where}): Metal needs an Apple Silicon Mac; "
                       "drop -o device=gpu or use -o device=cpu")
    return device


def availability(options: dict | None) -> Availability:
    try:
        mx = import_mlx()
        import mlx_lm  # noqa: F401  (the model code and generate loops)
    except ImportError as exc:
        missing = "mlx-lm" if getattr(exc, "name", "") == "mlx_lm" else "MLX"
        return Availability(False, f"{missing} is not installed", INSTALL_HINT)
    except Exception as exc:  # a broken native library fails in many ways
        return Availability(False, f"MLX cannot start: {type(exc).__name__}: {exc}", INSTALL_HINT)
    try:
        chosen_device(options or {}, mx)
    except PdxError as exc:
        return Availability(False, str(exc))
    return Availability(True, version=f"mlx {installed_version('mlx')}, mlx-lm {installed_version('mlx-lm')}")


def parse_settings(config: BackendConfig, mx, values: Mapping[str, object]) -> MlxSettings:
    """The settings of a run from its backend's option values (``Backend.option_values``, read once)."""
    options = dict(config.options)
    return MlxSettings(
        device=chosen_device(options, mx),
        prefill_step_size=values["prefill_step_size"],
        mlx_lm_runs=values["mlx_lm_runs"],
        speculation=from_options(options, values["num_draft_tokens"]),
    )
