"""Hardware detection, tested against output recorded from the real tools.

No NVIDIA GPU and no Mac exist on the machines these tests run on, so the
GPU and Apple paths are tested on text that ``nvidia-smi`` and ``sysctl``
printed on real machines, copied verbatim from benchmark logs and
environment reports people published with their results (the header line
is the one ``--format=csv`` prints for the query they ran; for
``--format=csv,noheader`` captures, the test names the query's columns).
The Linux CPU path runs for real here.
"""

import pytest

from pdx.domain import hardware
from pdx.domain.hardware import apple, catalog, nvidia
from pdx.domain.hardware.cpu import parse_cpuinfo

# --- nvidia-smi --query-gpu=... --format=csv, recorded on real GPUs ------------------------------------

H100_SXM_8X = """index, name, memory.total [MiB], clocks.current.sm [MHz], driver_version
0, NVIDIA H100 80GB HBM3, 81559 MiB, 345 MHz, 590.48.01
"""
L40S_2X = """index, name, driver_version, memory.total [MiB], clocks.max.sm [MHz], clocks.max.memory [MHz]
0, NVIDIA L40S, 575.51.03, 46068 MiB, 2520 MHz, 9001 MHz
1, NVIDIA L40S, 575.51.03, 46068 MiB, 2520 MHz, 9001 MHz
"""
RTX_4090 = """name, driver_version, memory.total [MiB], compute_cap, clocks.max.sm [MHz], clocks.max.memory [MHz]
NVIDIA GeForce RTX 4090, 580.159.03, 24564 MiB, 8.9, 3165 MHz, 10501 MHz
"""
RTX_3090_2X = """index, name, memory.total [MiB], driver_version, compute_cap
0, NVIDIA GeForce RTX 3090, 24576 MiB, 580.126.09, 8.6
1, NVIDIA GeForce RTX 3090, 24576 MiB, 580.126.09, 8.6
"""
RTX_5080 = """name, memory.total [MiB], driver_version, compute_cap
NVIDIA GeForce RTX 5080, 16303 MiB, 591.86, 12.0
"""
H200_8X = "name, memory.total [MiB], pcie.link.gen.max, pcie.link.width.max\n" + \
    "NVIDIA H200, 143771 MiB, 5, 16\n" * 8
# --format=csv,noheader captures of --query-gpu=name,memory.total,driver_version (one machine each)
NOHEADER = {
    "NVIDIA A100-SXM4-40GB, 40960 MiB, 580.95.05": ("nvidia-a100-40gb", 40960),
    "NVIDIA A100-SXM4-80GB, 81920 MiB, 580.95.05": ("nvidia-a100-80gb-sxm", 81920),
    "NVIDIA L40S, 46068 MiB, 580.95.05": ("nvidia-l40s", 46068),
    "NVIDIA H100 80GB HBM3, 81559 MiB, 580.95.05": ("nvidia-h100-sxm", 81559),
    "NVIDIA H100 PCIe, 81559 MiB, 570.211.01": ("nvidia-h100-pcie", 81559),
    "NVIDIA H200, 143771 MiB, 580.95.05": ("nvidia-h200", 143771),
    "NVIDIA H100 NVL, 95830 MiB, 580.65.06": (None, 95830),  # not an H100 SXM or PCIe: no match
    "NVIDIA B200, 183359 MiB, 580.95.05": (None, 183359),
    "NVIDIA GB10, [N/A], 580.126.09": ("nvidia-dgx-spark-gb10", None),  # unified memory: no figure
}
RTX_5090_NOHEADER = "NVIDIA GeForce RTX 5090, 32607 MiB, 610.74, 12.0"  # ...,driver_version,compute_cap


def test_h100_with_current_clocks():
    (gpu,) = nvidia.parse_csv(H100_SXM_8X)
    assert gpu == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "clock_sm_mhz": 345,
                   "driver": "590.48.01", "memory_bytes": 81559 * 2**20, "catalog": "nvidia-h100-sxm"}


def test_two_l40s_with_max_clocks_in_another_column_order():
    gpus = nvidia.parse_csv(L40S_2X)
    assert [g["index"] for g in gpus] == [0, 1]
    assert all(g["clock_sm_max_mhz"] == 2520 and g["clock_mem_max_mhz"] == 9001 and g["driver"] == "575.51.03"
               and g["catalog"] == "nvidia-l40s" for g in gpus)


@pytest.mark.parametrize("text, count, chip", [(RTX_4090, 1, "nvidia-rtx-4090"), (RTX_3090_2X, 2, "nvidia-rtx-3090"),
                                               (H200_8X, 8, "nvidia-h200"), (RTX_5080, 1, None)])
def test_consumer_and_datacenter_cards(text, count, chip):
    gpus = nvidia.parse_csv(text)
    assert len(gpus) == count and {g["catalog"] for g in gpus} == {chip}
    assert gpus[0]["memory_bytes"] > 15 * 2**30


@pytest.mark.parametrize("line", NOHEADER)
def test_noheader_captures(line):
    (gpu,) = nvidia.parse_csv(line, ("name", "memory.total", "driver_version"))
    assert (gpu["catalog"], gpu["memory_mib"]) == NOHEADER[line]
    assert gpu["driver"].count(".") >= 1


def test_the_5090_and_its_compute_capability():
    (gpu,) = nvidia.parse_csv(RTX_5090_NOHEADER, ("name", "memory.total", "driver_version", "compute_cap"))
    assert gpu["catalog"] == "nvidia-rtx-5090" and gpu["compute_cap"] == "12.0"
    assert catalog.get(gpu["catalog"]).bandwidth == 1792e9


def test_nothing_to_parse():
    assert nvidia.parse_csv("") == []
    assert nvidia.parse_csv("name, memory.total [MiB]\n") == []


# --- sysctl, recorded on real Macs --------------------------------------------------------------------

# `sysctl -n machdep.cpu.brand_string` then `sysctl hw.ncpu hw.perflevel0.logicalcpu hw.perflevel1.logicalcpu
# hw.memsize` on a Mac Studio (M2 Ultra, 192GB).
M2_ULTRA = """machdep.cpu.brand_string: Apple M2 Ultra
hw.ncpu: 24
hw.perflevel0.logicalcpu: 16
hw.perflevel1.logicalcpu: 8
hw.memsize: 206158430208
"""
# `sysctl machdep.cpu.brand_string hw.memsize hw.ncpu` on a MacBook Pro with the 30-core-GPU M3 Max.
M3_MAX_36GB = """machdep.cpu.brand_string: Apple M3 Max
hw.memsize: 38654705664
hw.ncpu: 14
"""
# The same command on a Mac with an M4 Pro and 48GB.
M4_PRO_48GB = """machdep.cpu.brand_string: Apple M4 Pro
hw.memsize: 51539607552
hw.ncpu: 14
"""
# `sysctl -a | grep -e brand_string -e cpu.core_count` on an M1 Max (memory size not in the capture).
M1_MAX = """machdep.cpu.brand_string: Apple M1 Max
machdep.cpu.core_count: 10
"""
# `sysctl -a | grep machdep.cpu` on another M1 Max (a MacBook Pro), from the benchmark notes it was published with.
M1_MAX_MACHDEP = """machdep.cpu.cores_per_package: 10
machdep.cpu.core_count: 10
machdep.cpu.logical_per_package: 10
machdep.cpu.thread_count: 10
machdep.cpu.brand_string: Apple M1 Max
"""


def test_m2_ultra():
    values = apple.parse_sysctl(M2_ULTRA)
    assert apple.apple_chip(values["machdep.cpu.brand_string"], values["hw.memsize"]).id == "apple-m2-ultra"
    described = apple.describe(values)
    assert described["memory_bytes"] == 192 * 2**30 and described["catalog"] == "apple-m2-ultra"


def test_m3_max_bin_follows_from_its_memory_size():
    # 36GB is sold only with the 14-core M3 Max, whose bandwidth is 300GB/s, not 400.
    values = apple.parse_sysctl(M3_MAX_36GB)
    chip = apple.apple_chip(values["machdep.cpu.brand_string"], values["hw.memsize"])
    assert chip.id == "apple-m3-max-14c" and chip.bandwidth == 300e9


def test_m4_pro_and_m1_max():
    values = apple.parse_sysctl(M4_PRO_48GB)
    assert apple.apple_chip(values["machdep.cpu.brand_string"], values["hw.memsize"]).bandwidth == 273e9
    values = apple.parse_sysctl(M1_MAX)
    assert apple.apple_chip(values["machdep.cpu.brand_string"]).id == "apple-m1-max"


def test_core_count_from_machdep_when_hw_physicalcpu_was_not_captured():
    described = apple.describe(apple.parse_sysctl(M1_MAX_MACHDEP))
    assert (described["catalog"], described["physical_cores"]) == ("apple-m1-max", 10)
    # Read the same way (values made up in the captured keys' form), a 14-core M3 Max is the 300GB/s bin
    # even without its memory size.
    values = {"machdep.cpu.brand_string": "Apple M3 Max", "machdep.cpu.core_count": "14"}
    assert apple.describe(values)["catalog"] == "apple-m3-max-14c"


def test_a_mac_run_on_its_gpu_is_judged_by_its_chip(monkeypatch, tmp_path):
    """What detection, the MLX backend and the ceilings do on a Mac, on the M2 Ultra capture above:
    sysctl is the one part replaced (it cannot run here); everything after it is the real code."""
    from pdx.measure import ceiling_sources as sources
    from pdx.domain.hardware import cpu
    from pdx.domain.models import identify
    from pdx.plugins.mlx import backend as mlx_backend
    from pdx.domain.synth import get_shape, write_hf

    monkeypatch.setattr(apple, "read_sysctl", lambda keys=apple.SYSCTL_KEYS: apple.parse_sysctl(M2_ULTRA))
    monkeypatch.setattr(cpu.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(nvidia, "query", lambda: [])
    monkeypatch.setattr(mlx_backend.sys, "platform", "darwin")
    machine = hardware.detect()
    assert (machine["kind"], machine["name"], machine["catalog"]) == ("soc", "Apple M2 Ultra", "apple-m2-ultra")
    assert mlx_backend.mac_chip()["catalog"] == "apple-m2-ultra"  # stored in the run's engine details
    model = identify(write_hf(get_shape("tiny"), "float16", tmp_path / "tiny")).to_dict()
    figures, basis = sources.resolve(machine, model, 16, device="gpu")  # MLX on Metal reports device "gpu"
    assert figures.bandwidth == 800e9 and basis["source"] == "catalog" and basis["ref"] == "apple-m2-ultra"


def test_m4_max_bins():
    # "Apple M4 Max" is the brand string a published M4 Max log shows; no public capture gives its
    # memsize, so these are the byte counts macOS reports for Apple's 36GB and 128GB configurations.
    assert apple.apple_chip("Apple M4 Max", 36 * 2**30).bandwidth == 410e9
    assert apple.apple_chip("Apple M4 Max", 128 * 2**30).bandwidth == 546e9
    assert apple.apple_chip("Apple M4 Max", 128 * 2**30, cpu_cores=14).id == "apple-m4-max-14c"
    assert apple.apple_chip("Apple M4 Max").id == "apple-m4-max"  # no size, no cores: the full chip


def test_unknown_macs_match_nothing():
    assert apple.apple_chip("Apple M9 Extreme", 64 * 2**30) is None
    assert apple.describe(apple.parse_sysctl("machdep.cpu.brand_string: Intel(R) Core(TM) i7-9750H CPU @ 2.60GHz\n"
                                             "hw.memsize: 17179869184\n"))["catalog"] is None


# --- the CPU, for real --------------------------------------------------------------------------------

def test_this_machine_is_detected_and_has_no_catalog_match():
    machine = hardware.detect()
    assert machine["cpu"]["logical_cores"] >= 1 and machine["cpu"]["memory_bytes"] > 0
    assert machine["kind"] == "cpu" and machine["gpus"] == [] and machine["catalog"] is None
    assert hardware.detect()["id"] == machine["id"]


def test_a_strix_halo_cpu_name_matches_its_catalog_entry():
    # The model name is the one /proc/cpuinfo prints on a Strix Halo machine (from a published capture);
    # the rest of this record is cut down to what the parser reads.
    cpuinfo = ("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD RYZEN AI MAX+ 395 w/ Radeon 8060S\n"
               "physical id\t: 0\ncore id\t: 0\nflags\t\t: fpu avx avx2 fma f16c avx512f\n\n")
    name = parse_cpuinfo(cpuinfo)["name"]
    assert catalog.match_cpu(name).id == "amd-ryzen-ai-max-395"
