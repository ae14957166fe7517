"""An NVIDIA GPU's own figures, through torch (the stack vLLM runs on).

- bandwidth: copy (``b.copy_(a)``: read + written) and read (``a.sum()``)
  over float32 device arrays, bytes counted the STREAM way;
- matmul: n x n x n products in float16, bfloat16 and float32 (TF32 off, so
  float32 is float32), int8 (``torch._int_mm``) where this torch has it, and
  fp8 e4m3 (``torch._scaled_mm``, float32 scales, bfloat16 out) where the GPU
  has it (compute capability 8.9 and up): 2 n^3 operations.

The 8-bit products are what engines call through cuBLASLt, whose fast kernels
take the second operand column-major: with a row-major one ``_int_mm`` read
127 TFLOP/s on an H200, column-major 859-963 (shared/recorded/h200/README.md).
Each 8-bit type is timed in every layout in :data:`LAYOUTS` that the call
accepts and the best counts, so a probe never reports less than a correct call
reaches on the same device; the entry keeps each layout's figure.

Timed with CUDA events around ``reps`` launches after an untimed one; the
best repetition counts. Runs in a child process (``pdx.measure.hardware.probe_child
cuda``).
"""

from __future__ import annotations

import functools

from pdx.domain.hardware.device_rates import bandwidth_record

FLOAT_TYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}
FP8_CAPABILITY = (8, 9)  # Ada and Hopper on: tensor cores with fp8


def column_major(matrix):
    """The same values with column-major strides: the layout cuBLASLt's 8-bit kernels take as the second
    operand (``b.t().contiguous().t()``: its transpose made contiguous, transposed back)."""
    return matrix.t().contiguous().t()


def row_major(matrix):
    return matrix.contiguous()


# Second-operand layouts an 8-bit product is timed in, the one cuBLASLt needs first.
LAYOUTS = {"column-major": column_major, "row-major": row_major}

METHOD = {
    "bandwidth": "torch on the CUDA device: copy b.copy_(a) (float32; read + written) and read a.sum(); CUDA-event "
                 "timed, best of the repetitions after an untimed one; the ceiling uses the best kernel",
    "matmul": "torch n x n x n matmul per data type (2 n^3 operations; TF32 off), int8 torch._int_mm where "
              "available and fp8 e4m3 torch._scaled_mm where the GPU has fp8 (compute capability 8.9+), each 8-bit "
              "product with a column-major second operand (cuBLASLt's layout) and row-major, the better counting; "
              "CUDA-event timed, best of the repetitions after an untimed one",
}


def _seconds(torch, work, reps: int) -> list[float]:
    work()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return times


def measure(index: int, array_bytes: int, matmul_n: int, reps: int) -> dict:
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    device = torch.device("cuda", index)
    torch.backends.cuda.matmul.allow_tf32 = False
    n = max(1024, array_bytes // 4)
    a = torch.rand(n, device=device)
    b = torch.empty_like(a)
    moved = {"copy": 2 * n * 4, "read": n * 4}
    # Each kernel holds its tensors, not this frame's names, so that deleting all three below frees the memory.
    kernels = {"copy": functools.partial(b.copy_, a), "read": a.sum}
    bandwidth = bandwidth_record(moved, {name: _seconds(torch, work, reps) for name, work in kernels.items()},
                                 n * 4, reps)
    del a, b, kernels

    ops = 2 * matmul_n**3
    matmul: dict = {}
    for key, dtype in FLOAT_TYPES.items():
        x = torch.randn(matmul_n, matmul_n, device=device, dtype=getattr(torch, dtype))
        y = torch.randn(matmul_n, matmul_n, device=device, dtype=getattr(torch, dtype))
        rates = [ops / t for t in _seconds(torch, lambda: x @ y, reps)]
        matmul[key] = {"dtype": dtype, "n": matmul_n, "repetitions": reps, "flops": max(rates), "samples": rates}
    props = torch.cuda.get_device_properties(device)
    for key, entry in eight_bit(torch, device, matmul_n, reps, (props.major, props.minor)).items():
        matmul[key] = entry
    return {"device_kind": "cuda", "device_info": {"device_name": props.name, "memory_size": props.total_memory,
                                                   "multiprocessors": props.multi_processor_count,
                                                   "compute_capability": f"{props.major}.{props.minor}"},
            "bandwidth": bandwidth, "matmul": matmul, "torch": torch.__version__}


def _eight_bit_calls(torch, device, n: int, capability: tuple[int, int]) -> dict:
    """Per 8-bit type this torch and GPU can multiply: (data type, first operand, second operand, product)."""
    calls = {}
    if hasattr(torch, "_int_mm"):
        x = torch.randint(-64, 64, (n, n), device=device, dtype=torch.int8)
        y = torch.randint(-64, 64, (n, n), device=device, dtype=torch.int8)
        calls["i8"] = ("int8", x, y, torch._int_mm)
    if capability >= FP8_CAPABILITY and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
        e4m3 = torch.float8_e4m3fn
        x = torch.randn(n, n, device=device).to(e4m3)
        y = torch.randn(n, n, device=device).to(e4m3)
        one = torch.tensor(1.0, device=device, dtype=torch.float32)  # scales: float32 tensors, not numbers

        def scaled(a, b):
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        calls["f8"] = ("float8_e4m3fn", x, y, scaled)
    return calls


def eight_bit(torch, device, n: int, reps: int, capability: tuple[int, int]) -> dict:
    """The 8-bit products, each timed in every second-operand layout the call accepts (a layout cuBLASLt
    refuses raises, and is left out); the best layout's figure is the entry's."""
    ops = 2 * n**3
    out = {}
    for key, (dtype, x, y, product) in _eight_bit_calls(torch, device, n, capability).items():
        layouts, refused = {}, {}
        for name, arrange in LAYOUTS.items():
            b = arrange(y)
            try:
                layouts[name] = [ops / t for t in _seconds(torch, lambda: product(x, b), reps)]
            except RuntimeError as exc:  # e.g. _scaled_mm takes a column-major second operand only
                refused[name] = str(exc).splitlines()[0][:200]
        if not layouts:
            continue
        best = max(layouts, key=lambda name: max(layouts[name]))
        out[key] = {"dtype": dtype, "n": n, "repetitions": reps, "flops": max(layouts[best]),
                    "samples": layouts[best], "layout": best,
                    "layouts": {name: max(rates) for name, rates in layouts.items()}, **(
                        {"refused": refused} if refused else {})}
    return out
