"""MLX's own figures on the device it computes on: Metal on a Mac, its CPU
backend elsewhere (how the tests exercise the same code here).

- bandwidth: copy (``b = a + 1`` over a float32 array: read + written) and
  read (``sum(a)``: read only, as decode reads weights), bytes counted the
  STREAM way;
- matmul: n x n x n products in float16, bfloat16 and float32 (2 n^3
  operations), and MLX's quantised matmul (``mx.quantized_matmul``, 4- and
  8-bit weights, group size 64) of an n x n activation by n x n weights,
  which is what prefill runs on a quantised model.

Each figure is the best of its repetitions after an untimed one (MLX
compiles kernels at first use); every repetition ends in ``mx.eval`` and a
device synchronise, so the time is the work's. Runs in a child process
(``pdx.measure.hardware.probe_child mlx``) so a crash in MLX is an error, not pdx's.
"""

from __future__ import annotations

import time

from pdx.domain.hardware.device_rates import bandwidth_record

FLOAT_TYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}
QUANT_BITS = {"q8": 8, "q4": 4}
GROUP_SIZE = 64

METHOD = {
    "bandwidth": "MLX on its device: copy b = a + 1 (float32; read + written) and read sum(a); best of the "
                 "repetitions after an untimed one; the ceiling uses the best kernel",
    "matmul": "MLX n x n x n matmul per data type (2 n^3 operations) and mx.quantized_matmul of n x n activations "
              f"by n x n 8- and 4-bit weights (group size {GROUP_SIZE}); best of the repetitions after an untimed one",
}


def _best(mx, make, reps: int) -> list[float]:
    """Seconds of each timed repetition of ``make()`` evaluated."""
    mx.eval(make())
    sync = getattr(mx, "synchronize", lambda: None)
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        mx.eval(make())
        sync()
        times.append(time.perf_counter() - start)
    return times


def measure(device: str, array_bytes: int, matmul_n: int, reps: int) -> dict:
    import mlx.core as mx

    mx.set_default_device(mx.gpu if device == "gpu" else mx.cpu)
    n = max(1024, array_bytes // 4)
    a = mx.random.uniform(shape=(n,), dtype=mx.float32)
    mx.eval(a)
    moved = {"copy": 2 * n * 4, "read": n * 4}
    kernels = {"copy": lambda: a + 1.0, "read": lambda: mx.sum(a)}
    bandwidth = bandwidth_record(moved, {name: _best(mx, make, reps) for name, make in kernels.items()}, n * 4, reps)

    matmul: dict = {}
    ops = 2 * matmul_n**3
    base = mx.random.normal(shape=(matmul_n, matmul_n))
    other = mx.random.normal(shape=(matmul_n, matmul_n))
    for key, dtype in FLOAT_TYPES.items():
        x, y = base.astype(getattr(mx, dtype)), other.astype(getattr(mx, dtype))
        rates = [ops / t for t in _best(mx, lambda: x @ y, reps)]
        matmul[key] = {"dtype": dtype, "n": matmul_n, "repetitions": reps, "flops": max(rates), "samples": rates}
    x = base.astype(mx.float16)
    for key, bits in QUANT_BITS.items():
        wq, scales, biases = mx.quantize(other.astype(mx.float16), group_size=GROUP_SIZE, bits=bits)
        make = lambda: mx.quantized_matmul(x, wq, scales, biases, transpose=True, group_size=GROUP_SIZE, bits=bits)  # noqa: E731
        rates = [ops / t for t in _best(mx, make, reps)]
        matmul[key] = {"dtype": f"{bits}-bit weights, float16 activations", "n": matmul_n, "repetitions": reps,
                       "flops": max(rates), "samples": rates}
    info = {}
    try:
        info = {k: v for k, v in dict(mx.device_info()).items() if isinstance(v, (str, int, float))}
    except Exception:  # older MLX has no device_info: the name is then unknown
        pass
    return {"device_kind": device, "device_info": info, "bandwidth": bandwidth, "matmul": matmul,
            "mlx": getattr(mx, "__version__", None)}
