"""A quantiser for GGUF types pdx's own llama.cpp does not make: those of a fork's llama-quantize
(ik_llama.cpp's IQ4_KS and IQ5_KS here), found at ``PDX_EXAMPLE_QUANTIZE``."""

import os
import subprocess

from pdx.contract.errors import PdxError

TYPES = ("IQ4_KS", "IQ5_KS")


def quantize(source, dest, qtype):
    tool = os.environ.get("PDX_EXAMPLE_QUANTIZE")
    if not tool:
        raise PdxError(f"no quantiser for {qtype}", "set PDX_EXAMPLE_QUANTIZE to ik_llama.cpp's llama-quantize")
    done = subprocess.run([tool, str(source), str(dest), qtype], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise PdxError(f"{tool} {qtype} failed (exit {done.returncode}): {last}")
    return dest
