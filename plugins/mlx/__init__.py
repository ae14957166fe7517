"""MLX backend: mlx-lm models on Apple Silicon (Metal) or, on Linux, MLX's CPU backend.

``mlx`` measures prefill and decode by pdx's own clock and definitions, and
records mlx-lm's own ``prompt_tps`` / ``generation_tps`` beside them. MLX is
imported only when the backend is asked about or used.
"""

from __future__ import annotations

from pdx.contract.hookspecs import hookimpl


@hookimpl
def pdx_register_backends(register) -> None:
    from pdx.plugins.mlx.backend import Mlx

    register(Mlx)
