"""An NVIDIA GPU's own figures, through torch (the stack vLLM runs on).

- bandwidth: copy (``b.copy_(a)``: read + written) and read (``a.sum()``)
  over float32 device arrays, bytes counted the STREAM way;
- matmul: n x n x n products in float16, bfloat16 and float32 (TF32 off, so
  float32 is float32), and int8 (``torch._int_mm``) where this torch has it:
  2 n^3 operations.

Timed with CUDA events around ``reps`` launches after an untimed one; the
best repetition counts. Runs in a child process (``pdx.hardware.probe_child
cuda``).
"""

from __future__ import annotations

from pdx.hardware.device_rates import bandwidth_record

FLOAT_TYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}

METHOD = {
    "bandwidth": "torch on the CUDA device: copy b.copy_(a) (float32; read + written) and read a.sum(); CUDA-event "
                 "timed, best of the repetitions after an untimed one; the ceiling uses the best kernel",
    "matmul": "torch n x n x n matmul per data type (2 n^3 operations; TF32 off) and int8 torch._int_mm where "
              "available; CUDA-event timed, best of the repetitions after an untimed one",
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
    kernels = {"copy": lambda: b.copy_(a), "read": lambda: a.sum()}
    bandwidth = bandwidth_record(moved, {name: _seconds(torch, work, reps) for name, work in kernels.items()},
                                 n * 4, reps)
    del a, b

    ops = 2 * matmul_n**3
    matmul: dict = {}
    for key, dtype in FLOAT_TYPES.items():
        x = torch.randn(matmul_n, matmul_n, device=device, dtype=getattr(torch, dtype))
        y = torch.randn(matmul_n, matmul_n, device=device, dtype=getattr(torch, dtype))
        rates = [ops / t for t in _seconds(torch, lambda: x @ y, reps)]
        matmul[key] = {"dtype": dtype, "n": matmul_n, "repetitions": reps, "flops": max(rates), "samples": rates}
    if hasattr(torch, "_int_mm"):
        x = torch.randint(-64, 64, (matmul_n, matmul_n), device=device, dtype=torch.int8)
        y = torch.randint(-64, 64, (matmul_n, matmul_n), device=device, dtype=torch.int8)
        rates = [ops / t for t in _seconds(torch, lambda: torch._int_mm(x, y), reps)]
        matmul["i8"] = {"dtype": "int8", "n": matmul_n, "repetitions": reps, "flops": max(rates), "samples": rates}
    props = torch.cuda.get_device_properties(device)
    return {"device_kind": "cuda", "device_info": {"device_name": props.name, "memory_size": props.total_memory,
                                                   "multiprocessors": props.multi_processor_count,
                                                   "compute_capability": f"{props.major}.{props.minor}"},
            "bandwidth": bandwidth, "matmul": matmul, "torch": torch.__version__}
