"""MLX's own quantised form of a synthetic HF-layout model (mlx-lm's affine quantisation).

mlx-lm quantises every linear layer, stack of experts and the token embedding
whose input width is a multiple of the group size: a weight (out, in) becomes
packed words ``weight`` (uint32, out x in*bits/32) plus per-group ``scales`` and
``biases`` (float16, out x in/group), each value being ``q * scale + bias``; a
stack (experts, out, in) likewise per expert. Norms, a layer's additive ``bias``
and gpt-oss's sinks stay float16. ``config.json`` says so with ``quantization: {group_size, bits,
mode}``, from which mlx-lm builds its quantised layers. Random words under a
small scale, centred by the bias, give weights of the float writers'
magnitude, and the very bytes (so the speed) a converted model has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdx.domain.synth.safetensors_writer import TensorPlan

# numpy is imported by the functions that make weights: finding a model already written needs none.
if TYPE_CHECKING:
    import numpy as np

# pdx weight-type name -> bits; group size as mlx-lm's converter defaults it
MLX_QUANT_TYPES = {"mlx-q4": 4, "mlx-q8": 8}
GROUP_SIZE = 64
_SCALE = {4: 0.004, 8: 0.0002}  # half-ranges of about 0.03 and 0.025


def quantization_config(bits: int) -> dict:
    return {"group_size": GROUP_SIZE, "bits": bits, "mode": "affine"}


def _packed(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    import numpy as np

    return np.frombuffer(rng.bytes(int(np.prod(shape)) * 4), dtype=np.uint32).reshape(shape)


def quantized_plan(plan: list[TensorPlan], bits: int, seed: int = 0) -> list[TensorPlan]:
    """``plan`` (float16) with every matrix or stack of them (``*.weight``) whose width divides into groups
    replaced by its packed form."""
    import numpy as np

    rng = np.random.default_rng(seed)  # consumed in plan order, as the float writers do
    scale = np.float16(_SCALE[bits])
    bias = np.float16(-float(scale) * (2**bits - 1) / 2)
    out = []
    for tensor in plan:
        if len(tensor.shape) not in (2, 3) or tensor.shape[-1] % GROUP_SIZE or not tensor.name.endswith(".weight"):
            out.append(tensor)
            continue
        *rows, cols = tensor.shape
        words, groups = (*rows, cols * bits // 32), (*rows, cols // GROUP_SIZE)
        base = tensor.name.removesuffix(".weight")
        out += [
            TensorPlan(tensor.name, "U32", words, lambda words=words: _packed(rng, words)),
            TensorPlan(f"{base}.scales", "F16", groups, lambda groups=groups: np.full(groups, scale)),
            TensorPlan(f"{base}.biases", "F16", groups, lambda groups=groups: np.full(groups, bias)),
        ]
    return out
