"""Prints how a mixture-of-experts model's decode bounds move with batch, beside a dense model
of the same bytes per token at batch 1: the expert coverage E*(1-(1-k/E)^B) at work.

    python3 tests/benchmarks/moe_batch_bounds.py [HARDWARE] [SHAPE] [TYPE]
"""

import sys
from dataclasses import replace

from pdx.domain.ceilings import napkin
from pdx.measure import ceiling_sources as sources
from pdx.domain.ceilings.roofline import knee_batch, phase


def main(hardware: str = "DGX Spark", shape: str = "gpt-oss-120b", weight_type: str = "mxfp4") -> None:
    spec = napkin.ModelSpec(shape=shape, weight_type=weight_type)
    model, dtype = napkin.model_figures(spec)
    hw = sources.hardware_figures(hardware, None, None, "fp4" if "fp4" in weight_type else "fp16")
    dense = replace(model, expert_bytes=0.0, expert_params=0.0, n_experts=0, experts_used=0,
                    file_bytes=model.step_bytes + model.embedding_bytes_unread, params=model.active_params)
    print(f"{hw.label}: {hw.bandwidth / 1e9:.0f} GB/s; {model.name}; {model.routing}")
    print(f"{'batch':>6} {'experts/layer':>14} {'MoE mem t/s':>12} {'dense mem t/s':>14}")
    for b in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        moe, flat = phase(model, hw, "decode", 1, batch=b), phase(dense, hw, "decode", 1, batch=b)
        print(f"{b:>6} {moe.experts_per_layer:>14.1f} {moe.memory_bound:>12,.0f} {flat.memory_bound:>14,.0f}")
    print(f"knee: MoE batch ~{knee_batch(model, hw) or float('nan'):.3g}, dense "
          f"~{knee_batch(dense, hw) or float('nan'):.3g}")


if __name__ == "__main__":
    main(*sys.argv[1:])
