"""Which accelerator to build llama.cpp for, and the CMake options that select it.

``detect("auto")`` asks the vendors' own tools, in this order:

- macOS: Metal (llama.cpp's default there);
- ``nvidia-smi`` lists a GPU: CUDA, built only for the compute capabilities of the GPUs present
  (``nvidia-smi --query-gpu=name,compute_cap --format=csv``: 9.0 -> ``CMAKE_CUDA_ARCHITECTURES=90``).
  With several GPUs of different capabilities every distinct one is built (each GPU must find its
  kernels; a build for the first alone would not run on the others);
- ``rocminfo`` lists a ``gfxNNNN`` agent: HIP for those targets (``GPU_TARGETS``);
- ``vulkaninfo`` lists a Vulkan device that is not a CPU: Vulkan. A software device (Mesa's
  llvmpipe) is never chosen by ``auto``: it is the CPU again, slower; ``--gpu vulkan`` builds for it;
- ``sycl-ls`` lists a GPU: SYCL (oneAPI's ``icpx``);
- else the CPU.

A GPU present without its toolkit (an H200 seen, no ``nvcc``) is an error naming what to install
and how to build for the CPU instead: a silent CPU build would benchmark the wrong device. An
explicit ``--gpu`` checks that backend's toolkit the same way.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pdx.contract.errors import PdxError

BACKENDS = ("cuda", "hip", "vulkan", "sycl", "metal", "cpu")
CHOICES = ("auto", *BACKENDS)
CPU_HINT = "or build for the CPU instead with `pdx llamacpp install --gpu cpu`"
# Only the f16 K/V flash-attention kernels: pdx's KV cache is f16 unless -o type_k/type_v say otherwise
# (llama.cpp then runs other K/V types' attention without these kernels). The full set multiplies CUDA's
# compile time.
CUDA_FA_QUANTS = "f16-f16"


@dataclass(frozen=True)
class Accelerator:
    backend: str  # one of BACKENDS
    flags: tuple[str, ...] = ()  # CMake options that select it (none for the CPU off macOS: the build as before)
    evidence: tuple[str, ...] = field(default=(), compare=False)  # which tool said what
    env: tuple[tuple[str, str], ...] = ()  # environment the configure step needs (HIP's compiler)


def _tool_output(cmd: list[str]) -> str | None:
    """A tool's stdout, or None where it is absent, fails or hangs."""
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


# --- parsers of the vendors' tool output ------------------------------------------------------------

def nvidia_gpus(text: str) -> list[tuple[str, str]]:
    """(name, compute capability) per GPU from ``nvidia-smi --query-gpu=name,compute_cap --format=csv``.

    The header names the columns, so a query with more columns (the recorded H200 file) reads the same.
    No GPU (empty output, "No devices were found") is an empty list; a GPU row whose capability is
    not ``N.N`` is an error.
    """
    rows = [row for row in csv.reader((text or "").splitlines(), skipinitialspace=True) if row]
    if not rows:
        return []
    header = [h.strip().split(" [")[0] for h in rows[0]]
    if "compute_cap" not in header:
        return []
    cap_at, name_at = header.index("compute_cap"), header.index("name") if "name" in header else None
    gpus = []
    for row in rows[1:]:
        if len(row) != len(header):
            raise PdxError(f"nvidia-smi printed a row of {len(row)} fields under {len(header)} columns: {row!r}",
                           "check `nvidia-smi --query-gpu=name,compute_cap --format=csv`, or pass --gpu")
        cap = row[cap_at].strip()
        if not re.fullmatch(r"\d{1,2}\.\d", cap):
            raise PdxError(f"nvidia-smi gave compute capability {cap!r}, not a number like 9.0",
                           "check `nvidia-smi --query-gpu=name,compute_cap --format=csv`, or pass --gpu")
        gpus.append((row[name_at].strip() if name_at is not None else "NVIDIA GPU", cap))
    return gpus


def cuda_architectures(capabilities: list[str]) -> str:
    """CMake's list for compute capabilities ("9.0" -> "90"), each distinct one once, in order."""
    return ";".join(sorted({cap.replace(".", "") for cap in capabilities}, key=int))


def rocm_targets(text: str) -> list[str]:
    """The distinct ``gfxNNNN`` agents ``rocminfo`` lists (``gfx000`` is its CPU agent)."""
    found = re.findall(r"^\s*Name:\s+(gfx[0-9a-f]+)\s*$", text or "", flags=re.MULTILINE)
    return sorted({t for t in found if t != "gfx000"})


def vulkan_devices(text: str) -> list[tuple[str, str]]:
    """(name, type) per device from ``vulkaninfo --summary``: type as Vulkan names it, e.g.
    ``PHYSICAL_DEVICE_TYPE_DISCRETE_GPU`` or ``PHYSICAL_DEVICE_TYPE_CPU`` (llvmpipe)."""
    types = re.findall(r"^\s*deviceType\s*=\s*(\S+)", text or "", flags=re.MULTILINE)
    names = re.findall(r"^\s*deviceName\s*=\s*(.+?)\s*$", text or "", flags=re.MULTILINE)
    return list(zip(names, types))


def sycl_gpus(text: str) -> list[str]:
    """The GPU devices ``sycl-ls`` lists (lines like ``[level_zero:gpu][level_zero:0] Intel(R) ...``)."""
    return [line.split("]", 2)[-1].strip() for line in (text or "").splitlines() if re.match(r"\[\w+:gpu\]", line)]


# --- toolkits ----------------------------------------------------------------------------------------

def _nvcc() -> str | None:
    """nvcc on PATH, else in ``CUDA_HOME`` where that is set, else where the toolkit installs it
    (often not on PATH)."""
    found = shutil.which("nvcc")
    if found:
        return found
    homes = [os.environ["CUDA_HOME"]] if "CUDA_HOME" in os.environ else [os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for home in homes:
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return str(Path(home) / "bin" / "nvcc")
    return None


def _hipcc() -> str | None:
    return shutil.which("hipcc") or next((p for p in ("/opt/rocm/bin/hipcc",) if Path(p).is_file()), None)


def _vulkan_sdk() -> tuple[str | None, str | None]:
    """(glslc, the Vulkan header) where both are present."""
    sdk = os.environ.get("VULKAN_SDK")
    roots = [Path(sdk)] if sdk else []
    header = next((str(r / "include/vulkan/vulkan.h") for r in [*roots, Path("/usr"), Path("/usr/local")]
                   if (r / "include/vulkan/vulkan.h").is_file()), None)
    return shutil.which("glslc"), header


def _has_layer_settings(header: Path) -> bool:
    core = header.with_name("vulkan_core.h")
    try:
        return "VK_EXT_LAYER_SETTINGS_EXTENSION_NAME" in core.read_text(errors="replace")
    except OSError:
        return False


MISSING = {
    "cuda": "install the CUDA toolkit (nvcc; e.g. Debian/Ubuntu `nvidia-cuda-toolkit`, or NVIDIA's cuda-toolkit), "
            "or put its bin folder on PATH / set CUDA_HOME",
    "hip": "install ROCm's HIP SDK (hipcc; e.g. the `rocm-hip-sdk` package)",
    "vulkan": "install a Vulkan SDK (Debian/Ubuntu: `apt-get install libvulkan-dev glslc spirv-headers`)",
    "sycl": "install Intel oneAPI's DPC++ compiler (icpx) and source its setvars.sh",
}


# --- the choice --------------------------------------------------------------------------------------

def present() -> tuple[str, list[str], dict]:
    """The accelerator this machine has, by its devices alone: (backend, evidence, what was read).
    Never raises for a missing toolkit; pdx uses it to pick among cached builds too."""
    evidence: list[str] = []
    if sys.platform == "darwin":
        return "metal", ["macOS: Metal is llama.cpp's default there"], {}
    smi = _tool_output(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv"])
    gpus = nvidia_gpus(smi) if smi is not None else []
    if gpus:
        names = ", ".join(f"{name} (compute capability {cap})" for name, cap in gpus)
        return "cuda", [f"nvidia-smi: {names}"], {"gpus": gpus}
    evidence.append("nvidia-smi: not found" if not shutil.which("nvidia-smi") else "nvidia-smi: no GPU listed")
    targets = rocm_targets(_tool_output(["rocminfo"]) or "")
    if targets:
        return "hip", [f"rocminfo: {', '.join(targets)}"], {"targets": targets}
    evidence.append("rocminfo: not found" if not shutil.which("rocminfo") else "rocminfo: no gfx agent")
    devices = vulkan_devices(_tool_output(["vulkaninfo", "--summary"]) or "")
    real = [(n, t) for n, t in devices if not t.endswith("_CPU")]
    if real:
        return "vulkan", [f"vulkaninfo: {', '.join(n for n, _ in real)}"], {}
    if devices:
        evidence.append(f"vulkaninfo: only {', '.join(n for n, _ in devices)}, a CPU device "
                        "(not chosen by auto; --gpu vulkan builds for it)")
    sycl = sycl_gpus(_tool_output(["sycl-ls"]) or "")
    if sycl:
        return "sycl", [f"sycl-ls: {', '.join(sycl)}"], {}
    return "cpu", [*evidence, "no GPU found"], {}


def detect(choice: str = "auto") -> Accelerator:
    """The accelerator to build for: ``choice`` (one of CHOICES) checked against this machine's
    toolkits, or with ``auto`` the one :func:`present` finds. Raises a one-line PdxError where
    the GPU's toolkit is missing."""
    if choice not in CHOICES:
        raise PdxError(f"--gpu {choice!r} is not a llama.cpp backend pdx "
                       f"builds", f"choose one of: {', '.join(CHOICES)}")
    found, evidence, seen = present()
    backend = found if choice == "auto" else choice
    if choice != "auto" and choice != found:
        evidence = [*evidence, f"--gpu {choice}: chosen"]
    if backend == "cpu":
        # llama.cpp builds Metal by default on macOS: the CPU alone must say so.
        return Accelerator("cpu", ("-DGGML_METAL=OFF",) if sys.platform == "darwin" else (), tuple(evidence))
    if backend == "metal":
        if sys.platform != "darwin":
            raise PdxError("--gpu metal builds only on macOS", "choose another --gpu (auto detects this machine's)")
        return Accelerator("metal", ("-DGGML_METAL=ON",), tuple(evidence))
    if backend == "cuda":
        return _cuda(seen.get("gpus", []), evidence)
    if backend == "hip":
        return _hip(seen.get("targets", []), evidence)
    if backend == "vulkan":
        glslc, header = _vulkan_sdk()
        if not (glslc and header):
            what = " and ".join(n for n, v in (("glslc", glslc), ("the Vulkan headers", header)) if not v)
            raise PdxError(f"Vulkan needs {what}, not found here: {MISSING['vulkan']}", CPU_HINT)
        if not _has_layer_settings(Path(header)):
            # Else the compile fails many minutes in (Debian 12's headers are 1.3.239).
            raise PdxError(f"the Vulkan headers at {Path(header).parent} lack VK_EXT_layer_settings, which "
                           "llama.cpp's Vulkan backend uses: install newer Vulkan headers (a Vulkan SDK; set "
                           "VULKAN_SDK to it; tests/vulkan/vulkan.sh unpacks Debian 13's)", CPU_HINT)
        return Accelerator("vulkan", ("-DGGML_VULKAN=ON",), (*evidence, f"glslc: {glslc}", f"Vulkan header: {header}"))
    icpx = shutil.which("icpx")
    if not icpx:
        raise PdxError(f"SYCL needs icpx, not found here: {MISSING['sycl']}", CPU_HINT)
    return Accelerator("sycl", ("-DGGML_SYCL=ON", "-DCMAKE_C_COMPILER=icx", "-DCMAKE_CXX_COMPILER=icpx"),
                       (*evidence, f"icpx: {icpx}"))


# (name, compiler, toolkit, CMake option for the device targets) of the backends built for the devices seen.
_TARGETED = {
    "cuda": ("CUDA", "nvcc", "CUDA toolkit (nvcc)", "-DCMAKE_CUDA_ARCHITECTURES"),
    "hip": ("HIP", "hipcc", "HIP SDK (hipcc)", "-DGPU_TARGETS"),
}


def _targeted(backend: str, compiler: str | None, seen: str, targets: str,
              evidence: list[str]) -> tuple[list[str], list[str], str]:
    """CUDA's and HIP's common part: the compiler must be there (else one line, naming the GPU ``seen``),
    and the build is only for the ``targets`` present, where any were seen. Returns the flags, the
    evidence and the compiler found."""
    name, tool, toolkit, option = _TARGETED[backend]
    if not compiler:
        problem = f"{seen} found but no {toolkit}" if seen else f"{name} needs {tool}, not found here"
        raise PdxError(f"{problem}: {MISSING[backend]}", CPU_HINT)
    flags = [f"-DGGML_{name}=ON"]
    if targets:
        flags.append(f"{option}={targets}")
    else:
        evidence = [*evidence, f"no GPU seen: llama.cpp's default {name} targets (a longer build)"]
    return flags, [*evidence, f"{tool}: {compiler}"], compiler


def _cuda(gpus: list[tuple[str, str]], evidence: list[str]) -> Accelerator:
    nvcc = _nvcc()
    flags, evidence, _ = _targeted("cuda", nvcc, ", ".join(sorted({name for name, _ in gpus})),
                                cuda_architectures([cap for _, cap in gpus]) if gpus else "", evidence)
    if not shutil.which("nvcc"):
        flags.append(f"-DCMAKE_CUDA_COMPILER={nvcc}")
    flags += [f"-DGGML_CUDA_FA_QUANTS={CUDA_FA_QUANTS}", "-DGGML_CUDA_NCCL=OFF"]
    return Accelerator("cuda", tuple(flags), tuple(evidence))


def _hip(targets: list[str], evidence: list[str]) -> Accelerator:
    seen = f"AMD GPU {', '.join(targets)}" if targets else ""
    flags, evidence, hipcc = _targeted("hip", _hipcc(), seen, ";".join(targets), evidence)
    rocm = Path(hipcc).resolve().parent.parent
    # llama.cpp's HIP build compiles with ROCm's clang, found through HIPCXX.
    env = (("HIPCXX", str(rocm / "llvm" / "bin" / "clang")), ("HIP_PATH", str(rocm)))
    return Accelerator("hip", tuple(flags), tuple(evidence), env)


def backend_of(flags: list[str]) -> str:
    """The backend a recorded flag list selects (builds recorded before pdx stored it)."""
    for backend in ("cuda", "hip", "vulkan", "sycl", "metal"):
        if f"-DGGML_{backend.upper()}=ON" in flags:
            return backend
    return "metal" if sys.platform == "darwin" and "-DGGML_METAL=OFF" not in flags else "cpu"
