"""Random weight values shared by the synthetic model writers."""

from __future__ import annotations

from typing import TYPE_CHECKING

# numpy is imported by the functions that make weights: finding a model already written needs none.
if TYPE_CHECKING:
    import numpy as np


def random_f16(rng: np.random.Generator, count: int) -> np.ndarray:
    """Random half floats of magnitude 2**-7..2**-3 and random sign, built from random bits (fast).

    Small enough that activations stay finite through any number of layers,
    large enough that nothing underflows.
    """
    import numpy as np

    bits = np.frombuffer(rng.bytes(count * 2), dtype=np.uint16).copy()
    exponent = 8 + ((bits >> 10) & 3)  # biased exponents 8..11
    bits = (bits & 0x83FF) | (exponent << 10).astype(np.uint16)
    return bits.view(np.float16)

