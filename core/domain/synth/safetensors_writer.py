"""Write a ``.safetensors`` file one tensor at a time.

The format is an 8-byte little-endian header length, a JSON header giving
each tensor's dtype, shape and byte range, then the raw bytes. Every size is
known before any data exists, so the header is written first and each
tensor is produced, written and dropped in turn: a 7B model needs memory for
its largest tensor only (the ``safetensors`` package wants them all at once).
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

# numpy is imported by the functions that make weights: finding a model already written needs none.
if TYPE_CHECKING:
    import numpy as np

# safetensors dtype name -> bytes per element
DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "U32": 4, "I32": 4, "U8": 1, "I8": 1}


@dataclass(frozen=True)
class TensorPlan:
    """A tensor to write: its name, safetensors dtype, shape and a producer of its bytes."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    make: Callable[[], np.ndarray]

    @property
    def nbytes(self) -> int:
        import numpy as np

        return int(np.prod(self.shape, dtype=np.int64)) * DTYPE_BYTES[self.dtype]


def header(plan: Sequence[TensorPlan], metadata: dict[str, str] | None = None) -> bytes:
    entries: dict = {"__metadata__": dict(metadata)} if metadata else {}
    offset = 0
    for tensor in plan:
        entries[tensor.name] = {"dtype": tensor.dtype, "shape": list(tensor.shape),
                                "data_offsets": [offset, offset + tensor.nbytes]}
        offset += tensor.nbytes
    text = json.dumps(entries, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data then starts 8-aligned, as the reference writer does
    return struct.pack("<Q", len(text)) + text


def write_safetensors(path: Path, plan: Sequence[TensorPlan], metadata: dict[str, str] | None = None) -> Path:
    """Write ``plan`` to ``path`` atomically (a temporary file renamed into place)."""
    import numpy as np

    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:
            fh.write(header(plan, metadata))
            for tensor in plan:
                data = np.ascontiguousarray(tensor.make())
                if data.nbytes != tensor.nbytes:
                    raise ValueError(f"{tensor.name}: produced {data.nbytes} bytes, planned {tensor.nbytes}")
                fh.write(data.tobytes())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
