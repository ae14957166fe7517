"""Apple Silicon: how much of the unified memory the GPU may keep wired.

Metal keeps a model resident only within the GPU's working set: the
recommended size MLX reports (``mx.device_info()``,
``max_recommended_working_set_size``), which follows the wired limit a user
sets with ``sysctl iogpu.wired_limit_mb`` (0: macOS's default). Both are
recorded; the recommended size is the limit, the wired one stands in when
MLX is not installed. A model plus its KV cache beyond that
limit is paged in and out during decode and the benchmark measures the
swapping, so pdx warns before it runs.
"""

from __future__ import annotations

from pdx.measure.conditions.machine import run_tool
from pdx.domain.hardware.apple import parse_sysctl

WIRED_KEYS = ("iogpu.wired_limit_mb", "debug.iogpu.wired_limit")  # macOS 14+, and the older name (bytes)


def parse_wired_limit(text: str) -> int | None:
    """The wired limit in bytes from ``sysctl`` output; None when it is unset (0) or absent."""
    values = parse_sysctl(text)
    # a setting's own output reads "old -> new": the new value is the last word
    mb = (values.get("iogpu.wired_limit_mb", "").split() or [""])[-1]
    if mb.isdigit() and int(mb) > 0:
        return int(mb) * 2**20
    raw = (values.get("debug.iogpu.wired_limit", "").split() or [""])[-1]
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def mlx_device_info() -> dict | None:
    try:
        import mlx.core as mx
    except ImportError:
        return None
    info = getattr(mx, "device_info", None) or getattr(getattr(mx, "metal", None), "device_info", None)
    try:
        return dict(info()) if info else None
    except Exception:  # MLX without a Metal device raises here; the limits are then unknown
        return None


def describe(sysctl_text: str | None, device_info: dict | None) -> dict | None:
    """The GPU memory limits from recorded or live outputs (None when neither says anything)."""
    wired = parse_wired_limit(sysctl_text or "")
    info = device_info or {}
    recommended = info.get("max_recommended_working_set_size")
    recommended = int(recommended) if isinstance(recommended, (int, float)) and recommended > 0 else None
    if wired is None and recommended is None:
        return None
    return {"wired_limit_bytes": wired, "recommended_working_set_bytes": recommended,
            "memory_bytes": info.get("memory_size") if isinstance(info.get("memory_size"), int) else None,
            "limit_bytes": recommended or wired,
            "limit_source": "max_recommended_working_set_size" if recommended else "iogpu.wired_limit_mb"}


def read(system: str, machine: str) -> dict | None:
    """This Mac's limits (None anywhere but Apple Silicon macOS)."""
    if system != "Darwin" or machine != "arm64":
        return None
    text = "".join(t for key in WIRED_KEYS if (t := run_tool("sysctl", key)))
    return describe(text, mlx_device_info())


def residency(limits: dict | None, model_bytes: float, kv_bytes: float) -> dict | None:
    """Whether weights plus KV cache stay within the GPU's limit."""
    if not limits or not limits.get("limit_bytes"):
        return None
    need = model_bytes + kv_bytes
    return {"model_bytes": round(model_bytes), "kv_bytes": round(kv_bytes), "need_bytes": round(need),
            "limit_bytes": limits["limit_bytes"], "limit_source": limits["limit_source"],
            "fits": need <= limits["limit_bytes"]}
