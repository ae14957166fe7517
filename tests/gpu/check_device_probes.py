"""Prints a CUDA device probe beside the catalog's H200 and H100 figures, and a
vLLM CUDA bench's ceilings, and checks that they make sense (exit 1 if not).

    python tests/gpu/check_device_probes.py PROBE_JSON [BENCH_JSON]

PROBE_JSON is ``pdx hw probe --device cuda --json``; BENCH_JSON is
``pdx bench --backend vllm ... --json``. Checks, per figure the catalog has
for the GPU the probe ran on: the probe is positive, at most 105% of the
vendor's peak (above it the measurement is wrong) and at least its floor
(a far lower figure means the probe measured something else: a host copy,
the wrong data type or operand layout, a launch-bound size). Each data type's
floor has two sources: the vendor's peak from pdx's hardware catalog, and the
share of it a correct call reached on a real H200 (REACHED, from
shared/recorded/h200/README.md); the floor is FLOOR_SHARE of that share, so a
slower clock or another Hopper part passes and a wrong call fails (int8 with a
row-major second operand read 6% there). A GPU with fp8 (compute capability
8.9+) must have an fp8 figure. The vLLM run must have stored its ceilings
with the device it ran on.
"""

from __future__ import annotations

import json
import sys

from pdx.domain.hardware import catalog
from pdx.base.units import fmt_si

CHIPS = ("nvidia-h200", "nvidia-h100-sxm", "nvidia-h100-pcie")
# probe figure -> (catalog figure, the lowest share of it a correct call reached on the H200, what reached it).
# Recorded 2026-12-04 on an NVIDIA H200, torch 2.11.0+cu130: shared/recorded/h200/README.md.
REACHED = {
    "copy bandwidth": ("bandwidth", 0.88, "b.copy_(a) float32 2 GiB: 4.24 TB/s of 4.8"),
    "read bandwidth": ("bandwidth", 0.88, "a.sum() float32 2 GiB: 4.30 TB/s of 4.8"),
    "f16 matmul": ("fp16", 0.69, "x @ y float16 n 4096-16384: 686-774 TFLOP/s of 989.5"),
    "bf16 matmul": ("bf16", 0.75, "x @ y bfloat16 n 8192: 759 TFLOP/s of 989.5"),
    "f32 matmul": ("fp32", 0.75, "x @ y float32, TF32 off, n 8192: 50.6 TFLOP/s of 67"),
    "i8 matmul": ("int8", 0.43, "torch._int_mm, second operand column-major, n 4096-16384: 859-963 TFLOP/s of 1979"),
    "f8 matmul": ("fp8", 0.66, "torch._scaled_mm e4m3, second operand column-major, n 4096-16384: "
                                "1,321-1,482 TFLOP/s of 1979"),
}
FLOOR_SHARE = 2 / 3  # of what a correct call reached: room for clocks, power limits and other Hopper parts
FIGURES = {figure: (key, reached * FLOOR_SHARE) for figure, (key, reached, _) in REACHED.items()}
CEILING = 1.05
FP8_CAPABILITY = (8, 9)


def probed(result: dict) -> dict[str, float]:
    bw, mm = result["bandwidth"], result["matmul"]
    found = {"copy bandwidth": bw["copy"], "read bandwidth": bw["read"]}
    found |= {f"{k} matmul": v["flops"] for k, v in mm.items()}
    return found


def vendor(chip, key: str) -> float | None:
    return chip.bandwidth if key == "bandwidth" else chip.dense_flops(key)


def print_floors() -> None:
    """Each figure's floor and where it comes from."""
    for figure, (key, reached, how) in REACHED.items():
        print(f"floor {figure:<15} {reached * FLOOR_SHARE:.0%} of the catalog's {key} peak: 2/3 of the {reached:.0%} "
              f"a correct call reached on an H200 ({how})")


def main(argv: list[str]) -> int:
    result = json.loads(open(argv[0]).read())
    name = (result.get("device_info") or {}).get("device_name", "")
    here = catalog.match_nvidia(name)
    unit = lambda key: "B/s" if key == "bandwidth" else "FLOP/s"  # noqa: E731
    chips = [catalog.get(c) for c in CHIPS]
    print(f"probe on {name or '?'} (catalog: {here.id if here else 'no match'}), torch {result.get('torch')}")
    print_floors()
    print(f"{'figure':<16}{'probed':>14}" + "".join(f"{c.name:>22}" for c in chips) + f"{'of this GPU':>14}")
    failures = []
    for figure, value in probed(result).items():
        key, floor = FIGURES.get(figure, (None, 0))
        cells = "".join(f"{fmt_si(vendor(c, key), unit(key)) if key and vendor(c, key) else '-':>22}" for c in chips)
        peak = vendor(here, key) if here and key else None
        share = f"{value / peak:.0%}" if peak else "-"
        print(f"{figure:<16}{fmt_si(value, unit(key or 'flops')):>14}{cells}{share:>14}")
        if not value > 0:
            failures.append(f"{figure}: not positive ({value})")
        elif peak and value > CEILING * peak:
            failures.append(f"{figure}: {value / peak:.0%} of the vendor peak: the probe mismeasures")
        elif peak and value < floor * peak:
            failures.append(f"{figure}: {value / peak:.0%} of the vendor peak, below {floor:.0%}")
    for key, entry in result["matmul"].items():
        if entry.get("layouts"):
            print(f"{key} second operand: " + ", ".join(f"{name} {fmt_si(flops, 'FLOP/s')}"
                                                       for name, flops in entry["layouts"].items())
                  + "".join(f", {name} refused" for name in entry.get("refused") or {}))
    capability = tuple(int(x) for x in str((result.get("device_info") or {}).get("compute_capability") or "0.0")
                       .split(".")[:2])
    if "i8" not in result["matmul"]:
        failures.append("i8 matmul: not measured (this torch has no torch._int_mm?)")
    if capability >= FP8_CAPABILITY and "f8" not in result["matmul"]:
        failures.append(f"f8 matmul: not measured on a GPU of compute capability {'.'.join(map(str, capability))}")
    if here is None:
        failures.append(f"{name!r} is not an H200/H100 the catalog knows: nothing to check the probe against")
    if len(argv) > 1:
        failures += check_bench(json.loads(open(argv[1]).read()))
    for failure in failures:
        print(f"FAIL {failure}")
    print("device probes: " + ("FAILED" if failures else "ok"))
    return 1 if failures else 0


def check_bench(runs: list[dict]) -> list[str]:
    problems = []
    for run in runs:
        basis, details = run.get("ceiling_basis") or {}, run["engine"].get("details") or {}
        print(f"vLLM run {run['id'][:12]} ({run['status']}): device {details.get('device')}, probe "
              f"{details.get('probe_device')}, ceilings from {basis.get('source')} "
              f"({basis.get('label') or basis.get('reason')})")
        for test in run["tests"]:
            c, rate = test.get("ceilings") or {}, (test.get("stats") or {}).get("rate", {}).get("mean")
            print(f"  {test['name']:<10} {rate or 0:>12.1f} t/s  ceiling {c.get('ceiling') or 0:>12.1f} "
                  f"({c.get('bound')}), {c.get('fraction') or 0:.0%}")
            if test["status"] != "ok":
                problems.append(f"{test['name']}: {test['status']} {test.get('error')}")
            elif c.get("fraction") and c["fraction"] > CEILING:
                problems.append(f"{test['name']}: {c['fraction']:.0%} of its ceiling")
        if details.get("probe_device") != "cuda:0":
            problems.append(f"run {run['id'][:12]}: vLLM did not say it ran on CUDA ({details})")
        if run["status"] != "complete":
            problems.append(f"run {run['id'][:12]}: {run['status']} ({run.get('error')})")
    return problems


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
